// Package streamstest runs a real embedded NATS server with JetStream for a test, on a random
// port, stored under the test's temp dir. Only _test.go files import it.
package streamstest

import (
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/streams"
)

// Embedded starts a NATS server listening on a random loopback port for this test and returns
// it with an in-process client connection; both stop when the test ends.
func Embedded(t testing.TB) (*streams.Embedded, *nats.Conn) {
	t.Helper()
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("embedded nats: %v", err)
	}
	nc, err := emb.Connect("test")
	if err != nil {
		emb.Shutdown()
		t.Fatalf("connect to embedded nats: %v", err)
	}
	t.Cleanup(func() {
		nc.Close()
		emb.Shutdown()
	})
	return emb, nc
}
