package streams

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// scaleStream gives an existing workspace stream the configured replica count, so that an
// operator who moves a deployment to a cluster, or raises --stream-replicas later, gets the
// streams of existing workspaces replicated too, not only those of new ones. JetStream copies
// the data to the new peers itself; the stream's durable consumers follow its replica count.
func (r *Relay) scaleStream(ctx context.Context, s jetstream.Stream) error {
	cfg := s.CachedInfo().Config
	if cfg.Replicas == r.cfg.Replicas {
		return nil
	}
	from := cfg.Replicas
	cfg.Replicas = r.cfg.Replicas
	if _, err := r.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("relay: scale stream %s from %d to %d replicas: %w", cfg.Name, from, cfg.Replicas, err)
	}
	r.logger.Info("stream scaled", "stream", cfg.Name, "from_replicas", from, "replicas", cfg.Replicas)
	return nil
}
