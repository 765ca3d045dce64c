package streams

import (
	"context"
	"errors"
	"fmt"
	"os"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// storeProbeSize is what RecoverStore writes to learn whether the store's disk takes writes
// again: a little more than a message block's first write.
const storeProbeSize = 1 << 20

// ErrStoreFull is returned by RecoverStore while the store's disk still refuses writes.
var ErrStoreFull = errors.New("the NATS store still cannot be written")

// RecoverStore brings back a JetStream whose store stopped taking writes. After a write error
// (a full disk) a stream refuses every later write, without an answer to the publisher, until
// its files are read again; so once a probe file can be written in the store directory,
// JetStream is restarted from its files, as after a crash, and every stream holds what reached
// the disk. While the probe fails it returns ErrStoreFull and changes nothing. Consumers of this
// process are recreated by their followers; durable ones are kept on disk.
func (e *Embedded) RecoverStore(ctx context.Context) error {
	if err := probeWrite(e.storeDir); err != nil {
		return fmt.Errorf("%w: %v", ErrStoreFull, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.srv.ShutdownJetStream(); err != nil {
		return fmt.Errorf("streams: stop jetstream: %w", err)
	}
	// The same configuration the server started with (natsserver.Server.Start).
	if err := e.srv.EnableJetStream(&natsserver.JetStreamConfig{StoreDir: e.storeDir, Strict: true, CompressOK: true}); err != nil {
		return fmt.Errorf("streams: restart jetstream: %w", err)
	}
	return nil
}

// probeWrite writes, syncs and removes a file of storeProbeSize bytes in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".natter-probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, storeProbeSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
