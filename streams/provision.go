package streams

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// conformStream gives an existing workspace stream the configured replica count and message
// limit, so that an operator who moves a deployment to a cluster, or raises --stream-replicas
// later, gets the streams of existing workspaces replicated too, not only those of new ones, and
// streams made before the limit are bounded too. JetStream copies the data to the new peers
// itself; the stream's durable consumers follow its replica count.
func (r *Relay) conformStream(ctx context.Context, s jetstream.Stream) error {
	cfg := s.CachedInfo().Config
	if cfg.Replicas == r.cfg.Replicas && cfg.MaxMsgs == r.cfg.StreamMaxMsgs {
		return nil
	}
	from, fromMax := cfg.Replicas, cfg.MaxMsgs
	cfg.Replicas, cfg.MaxMsgs = r.cfg.Replicas, r.cfg.StreamMaxMsgs
	if _, err := r.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("relay: update stream %s from %d to %d replicas, %d to %d messages: %w",
			cfg.Name, from, cfg.Replicas, fromMax, cfg.MaxMsgs, err)
	}
	r.logger.Info("stream updated", "stream", cfg.Name, "from_replicas", from, "replicas", cfg.Replicas,
		"from_max_msgs", fromMax, "max_msgs", cfg.MaxMsgs)
	return nil
}
