package streams

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DiscoverConfig configures Discover.
type DiscoverConfig struct {
	// NATS is the connection whose JetStream holds the workspace streams. Required.
	NATS *nats.Conn
	// Found is called, from one goroutine, for every workspace whose stream exists at each
	// rescan, and for each stream created: the same workspace is reported many times, and the
	// caller keeps what it already follows. It must not block for long. Required.
	Found func(workspaceID string)
	// Rescan is how often the stream list is read again, the safety net for a lost
	// stream-created advisory. Default 30s.
	Rescan time.Duration
	// Logger receives listing failures. Default slog.Default().
	Logger *slog.Logger
}

// Discover is the one way to learn the workspaces with a stream: it calls Found for every
// workspace stream that exists, then for each one created (the relay retires idle streams and
// creates them again at the next event), and again for every one at each rescan, until ctx
// ends.
func Discover(ctx context.Context, cfg DiscoverConfig) error {
	if cfg.NATS == nil || cfg.Found == nil {
		return errors.New("streams: DiscoverConfig.NATS and Found are required")
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	js, err := jetstream.New(cfg.NATS)
	if err != nil {
		return err
	}
	created := make(chan string, 256)
	sub, err := cfg.NATS.Subscribe(streamCreatedAdvisory("*"), func(m *nats.Msg) {
		name := strings.TrimPrefix(m.Subject, streamCreatedAdvisory(""))
		select {
		case created <- name:
		default: // the next rescan finds it
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	found := func(stream string) {
		if ws, ok := strings.CutPrefix(stream, StreamName("")); ok && ws != "" {
			cfg.Found(ws)
		}
	}
	scan := time.NewTimer(0)
	defer scan.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case name := <-created:
			found(name)
		case <-scan.C:
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			names := js.StreamNames(lctx)
			for name := range names.Name() {
				found(name)
			}
			if err := names.Err(); err != nil && ctx.Err() == nil {
				cfg.Logger.Warn("cannot list workspace streams", "error", err)
			}
			cancel()
			scan.Reset(cfg.Rescan)
		}
	}
}
