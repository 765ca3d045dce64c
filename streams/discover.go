package streams

import (
	"context"
	"errors"
	"log/slog"
	"maps"
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
	// Store vouches for the workspaces: a stream's name or an advisory is only a hint. Required.
	Store *persist.Store
	// Found is called, from one goroutine, for every workspace whose stream exists at each
	// rescan, and for each stream created, at once and again a moment later (advisoryEcho): the
	// same workspace is reported many times, and the caller keeps what it already follows. It
	// must not block for long. Required.
	Found func(workspaceID string)
	// Rescan is how often the stream list is read again, the safety net for a lost
	// stream-created advisory. Default 30s.
	Rescan time.Duration
	// Logger receives listing failures. Default slog.Default().
	Logger *slog.Logger
}

// advisoryEcho is how long after a stream-created advisory its workspace is reported again:
// nats-server sends the advisory before the stream can be looked up (it registers the stream
// with the account afterwards), so a follower started at once may find no stream and, leaving
// with it (WhileStreamExists), not look again before the next rescan (push and email re-list
// every 2 s). A follower already
// following keeps the second report for after its stream is gone, where it costs one look.
const advisoryEcho = 250 * time.Millisecond

// discoverBatch bounds the workspaces checked against Postgres in one query, and the
// stream-created advisories waiting to be checked.
const discoverBatch = 256

// Discover is the one way to learn the workspaces with a stream: it calls Found for every
// workspace stream that exists, then for each one created (the relay retires idle streams and
// creates them again at the next event), and again for every one at each rescan, until ctx
// ends.
//
// Whatever names a workspace on NATS (an advisory, which anyone able to publish there can forge;
// a stream's name) is checked against Postgres first: only a workspace that exists there is
// reported, so a flood of forged names starts nothing and holds nothing but a bounded queue. A
// name the check could not settle (the database is unreachable) is reported at a later rescan.
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
	// confirmed holds the workspaces Postgres vouched for whose stream the last rescan listed (or
	// that were confirmed since): no more than the workspaces that exist and have a stream.
	confirmed := map[string]bool{}
	found := func(names []string) {
		var ids, unknown []string
		for _, name := range names {
			if ws, ok := strings.CutPrefix(name, StreamName("")); ok && ws != "" && !slices.Contains(ids, ws) {
				ids = append(ids, ws)
				if !confirmed[ws] {
					unknown = append(unknown, ws)
				}
			}
		}
		if len(unknown) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			known, err := persist.ReadV(cctx, cfg.Store, func(tx *persist.Reader) ([]string, error) {
				return tx.WorkspacesExisting(cctx, unknown)
			})
			cancel()
			if err != nil && ctx.Err() == nil {
				cfg.Logger.Warn("cannot check discovered workspaces", "error", err)
			}
			for _, ws := range known {
				confirmed[ws] = true
			}
		}
		for _, ws := range ids { // in the order heard of
			if confirmed[ws] {
				cfg.Found(ws)
			}
		}
	}
	scan := time.NewTimer(0)
	defer scan.Stop()
	// echoes are the names heard of in advisories since the echo timer started, reported again
	// when it fires (advisoryEcho).
	echoes := map[string]bool{}
	echo := time.NewTimer(advisoryEcho)
	echo.Stop()
	defer echo.Stop()
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
			if len(echoes) == 0 {
				echo.Reset(advisoryEcho)
			}
			for _, name := range names {
				if len(echoes) < discoverBatch {
					echoes[name] = true
				}
			}
		case <-echo.C:
			found(slices.Collect(maps.Keys(echoes)))
			clear(echoes)
		case <-scan.C:
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			list := js.StreamNames(lctx)
			listed := map[string]bool{}
			var names []string
			for name := range list.Name() {
				listed[strings.TrimPrefix(name, StreamName(""))] = true
				if names = append(names, name); len(names) == discoverBatch {
					found(names)
					names = names[:0]
				}
			}
			found(names)
			err := list.Err()
			if err != nil && ctx.Err() == nil {
				cfg.Logger.Warn("cannot list workspace streams", "error", err)
			}
			if err == nil { // a workspace whose stream is gone is checked again when it is back
				maps.DeleteFunc(confirmed, func(ws string, _ bool) bool { return !listed[ws] })
			}
			cancel()
			scan.Reset(cfg.Rescan)
		}
	}
}
