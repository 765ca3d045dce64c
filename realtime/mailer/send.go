package mailer

import (
	"context"
	"time"

	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/persist"
)

// claimBatch bounds the batches one claim takes.
const claimBatch = 16

// retention is how long finished batches (and so their unsubscribe links) are kept.
const retention = 90 * 24 * time.Hour

// sendLoop claims due batches and sends them until ctx ends; between claims it sleeps until the
// next batch falls due, PollInterval at most, or a new batch is queued here.
func (d *Deliverer) sendLoop(ctx context.Context) {
	var prunedAt time.Time
	for ctx.Err() == nil {
		if time.Since(prunedAt) > time.Hour {
			prunedAt = time.Now()
			d.prune(ctx)
		}
		batches, err := persist.WithTxV(ctx, d.cfg.Store, func(tx *persist.Tx) ([]persist.EmailBatch, error) {
			return tx.EmailClaim(ctx, d.cfg.Lease, claimBatch)
		})
		if err != nil && ctx.Err() == nil {
			d.logger.Warn("email cannot claim batches", "error", err)
		}
		for _, b := range batches {
			d.send(ctx, b)
		}
		if len(batches) == claimBatch {
			continue
		}
		wait := d.cfg.PollInterval
		next, err := persist.ReadV(ctx, d.cfg.Store, func(tx *persist.Reader) (time.Time, error) { return tx.EmailNextDue(ctx) })
		if err == nil && !next.IsZero() {
			wait = min(wait, max(time.Until(next)+10*time.Millisecond, 10*time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-d.wake:
		}
		t.Stop()
	}
}

// send re-checks a claimed batch, emails it, and records the outcome: sent; cancelled; a
// temporary failure (4xx, no answer) tried again after a back-off, until MaxAttempts; a
// permanent one (5xx) failed at once.
func (d *Deliverer) send(ctx context.Context, b persist.EmailBatch) {
	type built struct {
		digest persist.EmailDigest
		reason string
	}
	got, err := persist.WithTxV(ctx, d.cfg.Store, func(tx *persist.Tx) (built, error) {
		digest, reason, err := tx.EmailDigestBuild(ctx, b)
		return built{digest, reason}, err
	})
	digest, reason := got.digest, got.reason
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("email cannot read a batch", "batch_id", b.ID, "error", err)
		}
		return // claimed again when the lease ends
	}
	if reason != "" {
		d.finish(b, persist.EmailCancelled, reason)
		return
	}
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.SendTimeout)
	defer cancel()
	_, err = d.cfg.Sender.Send(sendCtx, render(digest, d.cfg.PublicURL, b.ID))
	switch {
	case err == nil:
		d.finish(b, persist.EmailSent, "")
	case email.Permanent(err) || b.Attempt >= d.cfg.MaxAttempts:
		d.logger.Warn("email not sent", "batch_id", b.ID, "attempt", b.Attempt, "error", err)
		d.finish(b, persist.EmailFailed, err.Error())
	default:
		wait := d.cfg.RetryBase << min(b.Attempt-1, 16)
		wait = min(wait, time.Hour)
		d.logger.Info("email will be tried again", "batch_id", b.ID, "attempt", b.Attempt, "in", wait, "error", err)
		werr := d.cfg.Store.WithTx(context.WithoutCancel(ctx), func(tx *persist.Tx) error {
			return tx.EmailRetry(ctx, b, tx.Now().Add(wait), err.Error())
		})
		if werr != nil {
			d.logger.Warn("email cannot record a retry", "batch_id", b.ID, "error", werr)
		}
		d.outcome(Outcome{BatchID: b.ID, UserID: b.UserID, Result: "retry", Reason: err.Error()})
	}
}

// finish records a final outcome. It runs even while shutting down: an email the relay took
// must be recorded, or it would be sent again.
func (d *Deliverer) finish(b persist.EmailBatch, result, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := d.cfg.Store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.EmailFinish(ctx, b, result, reason)
		return err
	})
	if err != nil {
		d.logger.Warn("email cannot record an outcome", "batch_id", b.ID, "result", result, "error", err)
	}
	d.outcome(Outcome{BatchID: b.ID, UserID: b.UserID, Result: result, Reason: reason})
}

func (d *Deliverer) outcome(o Outcome) {
	if d.cfg.OnOutcome != nil {
		d.cfg.OnOutcome(o)
	}
}

func (d *Deliverer) prune(ctx context.Context) {
	err := d.cfg.Store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.EmailBatchesPrune(ctx, tx.Now().Add(-retention))
		return err
	})
	if err != nil && ctx.Err() == nil {
		d.logger.Warn("email cannot prune old batches", "error", err)
	}
}
