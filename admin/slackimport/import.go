package slackimport

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/blob"
)

// Source is the import_records source of every Slack import: Slack's ids (U…, C…, F…) are
// unique across workspaces, and messages are keyed by conversation and timestamp.
const Source = "slack"

// DefaultBatchSize is how many records share a transaction when Options.BatchSize is 0.
const DefaultBatchSize = 200

// Options configure an import.
type Options struct {
	Store       *persist.Store
	WorkspaceID string
	// Uploads stores the files found under FilesDir or inside the archive (__uploads/<id>/);
	// nil keeps a note with each file's name instead.
	Uploads blob.Store
	// FilesDir is a folder of downloaded files: <file id>/<name> or <file id> (""; none).
	FilesDir string
	// EmailMap maps an address in the export to the one its person uses now (lowercase keys).
	EmailMap map[string]string
	// Progress, when set, is called as the import moves from one conversation day to the next.
	Progress func(Progress)
	// BatchSize is how many records share a transaction (default DefaultBatchSize).
	BatchSize int
}

// ImportFile imports the export at path (a zip). See ImportArchive.
func ImportFile(ctx context.Context, path string, o Options) (Report, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return Report{}, fmt.Errorf("open the export: %w", err)
	}
	defer zr.Close()
	return ImportArchive(ctx, &zr.Reader, o)
}

// ImportArchive imports a Slack export into the workspace: people, then channels and
// conversations, then each conversation's days in date order, messages in timestamp order. A
// record the store refuses is reported and skipped; the error is for what stops the whole
// import (an unreadable archive, the database gone, ctx ended), with the report so far.
func ImportArchive(ctx context.Context, zr *zip.Reader, o Options) (Report, error) {
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	im := &importer{o: o, rep: Report{Counts: map[string]int{}, Skips: []Skip{}},
		people: map[string]personRef{}, channels: map[string]place{}, orphans: map[string]string{},
		folders: map[string]string{}}
	a, err := newArchive(zr)
	if err != nil {
		return im.rep, err
	}
	im.archive = a
	im.h, err = persist.WithTxV(ctx, o.Store, func(tx *persist.Tx) (persist.History, error) {
		return tx.HistoryOpen(ctx, o.WorkspaceID, Source)
	})
	if err != nil {
		return im.rep, err
	}
	for _, phase := range []func(context.Context) error{im.importPeople, im.importPlaces, im.importMessages} {
		if err := phase(ctx); err != nil {
			return im.rep, err
		}
	}
	return im.rep, nil
}

// importer is one run's state: what the Slack ids became, and the report.
type importer struct {
	o       Options
	h       persist.History
	archive *archive
	rep     Report
	// people maps Slack user and bot ids to Natter users; channels maps conversation ids to
	// places (and names, for <#C…> links).
	people   map[string]personRef
	channels map[string]place
	// orphans maps "<conversation>/<thread_ts>" of a thread whose root is not in the export to
	// the reply that became its root, so the thread's later replies follow it.
	orphans map[string]string
	// order lists the conversations imported, in the export's order, for the message phase.
	order []string
	// folders are the day-file folders of every listed conversation, imported or not: their
	// conversation's name in the report.
	folders  map[string]string
	messages int
}

func (im *importer) progress(p Progress) {
	if im.o.Progress != nil {
		p.Messages = im.messages
		im.o.Progress(p)
	}
}

// step is one record's work in a batch. run writes it in tx and returns what to do once the
// transaction has committed (count it, remember its id); the store may run it more than once.
type step struct {
	what string
	run  func(ctx context.Context, tx *persist.Tx) (after func(), err error)
}

// apply runs steps in one transaction. A step the store refuses (persist.IsRefusal) before its
// first write is skipped and reported, and the rest go on; one that fails after writing
// aborts the transaction, and the steps are run again one per transaction, so only the bad one
// is skipped. Anything else (the database gone, ctx ended) stops the import.
func (im *importer) apply(ctx context.Context, steps []step) error {
	if len(steps) == 0 {
		return nil
	}
	var afters []func()
	var skips []Skip
	err := im.o.Store.WithTx(ctx, func(tx *persist.Tx) error {
		afters, skips = afters[:0], skips[:0]
		for _, s := range steps {
			after, err := s.run(ctx, tx)
			if early(err) {
				skips = append(skips, Skip{What: s.what, Reason: reason(err)})
				continue
			}
			if err != nil {
				return err
			}
			if after != nil {
				afters = append(afters, after)
			}
		}
		return nil
	})
	switch {
	case err == nil:
		for _, s := range skips {
			im.rep.skip(s.What, s.Reason)
		}
		for _, f := range afters {
			f()
		}
		return nil
	case ctx.Err() != nil || !persist.IsRefusal(err):
		return err
	case len(steps) == 1:
		im.rep.skip(steps[0].what, reason(err))
		return nil
	}
	for _, s := range steps {
		if err := im.apply(ctx, []step{s}); err != nil {
			return err
		}
	}
	return nil
}

// early reports a refusal persist.History makes before any write of the record (see its
// contract): the transaction goes on without it.
func early(err error) bool {
	e, ok := persist.ErrorOf(err)
	return ok && (e.Code == persist.CodeInvalidRequest || e.Code == persist.CodeNotFound || e.Code == persist.CodeMessageDeleted) &&
		!errors.Is(err, errLate)
}

// errLate marks a refusal that came after the record's first write, so the batch is redone.
var errLate = errors.New("refused after a write")

// reason is the sentence of a refusal, for the report.
func reason(err error) string {
	if e, ok := persist.ErrorOf(err); ok {
		return e.Message
	}
	return err.Error()
}

// batches runs steps in transactions of Options.BatchSize.
func (im *importer) batches(ctx context.Context, steps []step) error {
	for len(steps) > 0 {
		n := min(len(steps), im.o.BatchSize)
		if err := im.apply(ctx, steps[:n]); err != nil {
			return err
		}
		steps = steps[n:]
	}
	return nil
}
