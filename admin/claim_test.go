package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams/streamstest"
)

// TestOneNATSPerDatabase: a second `natter serve` with built-in NATS on a database another one
// serves is refused with a sentence saying why, and so is one on an external NATS beside it
// (issue 23, silent failure 2: both started, and sockets on the second received nothing).
func TestOneNATSPerDatabase(t *testing.T) {
	t.Parallel()
	emb, _ := streamstest.Embedded(t)
	url := persisttest.URL(t)
	serve := []string{"serve", "--database-url", url, "--addr", "127.0.0.1:0", "--web-push=false", "--access-log=false"}
	startServer(t, append(serve, "--data-dir", t.TempDir())...)

	out, err := run(t, append(serve, "--data-dir", t.TempDir())...)
	require.Error(t, err)
	require.NotContains(t, out, "natter listening")
	require.ErrorContains(t, err, "another natter server with a different NATS is running on this database")
	require.ErrorContains(t, err, "each server with built-in NATS needs its own database")

	out, err = run(t, append(serve, "--data-dir", t.TempDir(), "--nats-url", emb.TrustedURL())...)
	require.Error(t, err)
	require.NotContains(t, out, "natter listening")
	require.ErrorContains(t, err, "a server with built-in NATS holds it")
}
