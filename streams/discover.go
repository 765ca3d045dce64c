package streams

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natterchat/natter/persist"
)

// DiscoverConfig configures Discover.
type DiscoverConfig struct {
	// NATS is the connection whose JetStream holds the workspace streams. Required.
	NATS *nats.Conn
	// Store vouches for the workspaces: a stream name or an advisory is only a hint. Required.
	Store *persist.Store
	// Found is called once per workspace whose stream exists or is created, from one goroutine.
	// It must not block for long. Required.
	Found func(workspaceID string)
	// Rescan is how often the stream list is read again, the safety net for a lost
	// stream-created advisory. Default 30s.
	Rescan time.Duration
	// Logger receives listing failures. Default slog.Default().
	Logger *slog.Logger
}

// discoverBatch bounds the workspaces checked against Postgres in one query.
const discoverBatch = 256

// Discover is the one way to learn the workspaces: it calls Found for every workspace stream
// that exists, then for each one created, until ctx ends. A workspace is reported once per call
// of Discover, even if its stream is rebuilt; Follow takes care of that.
//
// Whatever names a workspace on NATS (an advisory anyone able to publish there can forge, a
// stream's name) is checked against Postgres first: only a workspace that exists there is
// reported, so a flood of forged names starts nothing and holds nothing but a bounded queue. A
// name the check could not settle (the database is unreachable) is found by the next rescan.
func Discover(ctx context.Context, cfg DiscoverConfig) error {
	if cfg.NATS == nil || cfg.Store == nil || cfg.Found == nil {
		return errors.New("streams: DiscoverConfig.NATS, Store and Found are required")
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
	created := make(chan string, discoverBatch)
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
	seen := map[string]bool{}
	// found reports the workspaces of those stream names that Postgres knows and were not seen.
	found := func(names []string) {
		var ids []string
		for _, name := range names {
			if ws, ok := strings.CutPrefix(name, StreamName("")); ok && ws != "" && !seen[ws] && !slices.Contains(ids, ws) {
				ids = append(ids, ws)
			}
		}
		if len(ids) == 0 {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		known, err := persist.ReadV(cctx, cfg.Store, func(tx *persist.Reader) ([]string, error) {
			return tx.WorkspacesExisting(cctx, ids)
		})
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("cannot check discovered workspaces", "error", err)
			}
			return
		}
		for _, ws := range ids { // in the order heard of
			if slices.Contains(known, ws) {
				seen[ws] = true
				cfg.Found(ws)
			}
		}
	}
	scan := time.NewTimer(0)
	defer scan.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case name := <-created:
			names := []string{name}
			for more := true; more && len(names) < discoverBatch; {
				select {
				case name := <-created:
					names = append(names, name)
				default:
					more = false
				}
			}
			found(names)
		case <-scan.C:
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			list := js.StreamNames(lctx)
			var names []string
			for name := range list.Name() {
				if names = append(names, name); len(names) == discoverBatch {
					found(names)
					names = names[:0]
				}
			}
			found(names)
			if err := list.Err(); err != nil && ctx.Err() == nil {
				cfg.Logger.Warn("cannot list workspace streams", "error", err)
			}
			cancel()
			scan.Reset(cfg.Rescan)
		}
	}
}
