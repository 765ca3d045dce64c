package archive

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/natterchat/natter/persist"
)

// maxLine bounds one line of a .jsonl entry: a message's body is at most 40,000 characters, so
// only a hostile or broken archive comes near it, and a reader never holds more than this.
const maxLine = 16 << 20

// batchSize is how many lines one import transaction writes; a batch that fails is written
// again a line at a time, so one bad record is skipped and reported, never the whole batch.
const batchSize = 200

// Skip is a record the import left out, and why.
type Skip struct {
	Entry  string `json:"entry"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// maxSkipsNamed bounds Report.Skips; Report.SkipCount counts them all.
const maxSkipsNamed = 1000

// Report is what an import did: per kind, how many records it created, matched to rows already
// there (people by email) and found imported by an earlier run; and what it skipped.
type Report struct {
	WorkspaceID string            `json:"workspace_id"`
	Source      string            `json:"source"`
	Counts      map[string]*Count `json:"counts"`
	SkipCount   int               `json:"skip_count"`
	Skips       []Skip            `json:"skips,omitempty"`
}

// Count is one kind's line of a Report.
type Count struct {
	Created  int `json:"created"`
	Matched  int `json:"matched"`
	Existing int `json:"existing"`
}

func (r *Report) count(kind string, im persist.Imported) {
	c := r.Counts[kind]
	if c == nil {
		c = &Count{}
		r.Counts[kind] = c
	}
	switch {
	case im.Created:
		c.Created++
	case im.Matched:
		c.Matched++
	default:
		c.Existing++
	}
}

func (r *Report) skip(entry string, line int, err error) {
	r.SkipCount++
	if len(r.Skips) < maxSkipsNamed {
		r.Skips = append(r.Skips, Skip{Entry: entry, Line: line, Reason: reason(err)})
	}
}

// reason is an error as a person reads it: a store error's sentence, or the error.
func reason(err error) string {
	if e, ok := persist.ErrorOf(err); ok {
		return e.Message
	}
	return err.Error()
}

// eachLine calls fn with every line of a .jsonl entry (an absent entry has none) and its number.
func eachLine(ctx context.Context, zr *zip.Reader, name string, fn func(n int, line []byte) error) error {
	f, err := zr.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := fn(n, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s, after line %d: %w", name, n, err)
	}
	return nil
}

// readJSON reads a .json entry.
func readJSON(zr *zip.Reader, name string, v any) error {
	f, err := zr.Open(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, maxLine)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// handler writes one line in tx and returns what to do once its transaction commits (nil:
// nothing), since a transaction may run more than once.
type handler func(tx *persist.Tx, n int, line []byte) (after func(), err error)

// batches writes an entry's lines batchSize at a time, each batch one transaction; a batch that
// fails is written again a line at a time, and a line that fails alone is skipped and reported.
func (im *importer) batches(ctx context.Context, name string, h handler) error {
	type item struct {
		n    int
		line []byte
	}
	var batch []item
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		run := func(items []item) ([]func(), error) {
			return persist.WithTxV(ctx, im.o.Store, func(tx *persist.Tx) ([]func(), error) {
				var afters []func()
				for _, it := range items {
					after, err := h(tx, it.n, it.line)
					if err != nil {
						return nil, err
					}
					if after != nil {
						afters = append(afters, after)
					}
				}
				return afters, nil
			})
		}
		afters, err := run(batch)
		if err != nil {
			if !im.skippable(ctx, err) {
				return fmt.Errorf("%s line %d: %w", name, batch[0].n, err)
			}
			afters = nil
			for _, it := range batch {
				a, err := run([]item{it})
				if err != nil {
					if !im.skippable(ctx, err) {
						return fmt.Errorf("%s line %d: %w", name, it.n, err)
					}
					im.report.skip(name, it.n, err)
					continue
				}
				afters = append(afters, a...)
			}
		}
		for _, a := range afters {
			a()
		}
		batch = batch[:0]
		return nil
	}
	err := eachLine(ctx, im.zr, name, func(n int, line []byte) error {
		batch = append(batch, item{n, append([]byte(nil), line...)})
		if len(batch) == batchSize {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// skippable says whether a record's failure skips the record rather than ends the import: any
// but a cancellation and the database being out of reach (which would skip everything after).
func (im *importer) skippable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	e, ok := persist.ErrorOf(err)
	return !ok || e.Code != persist.CodeUnavailable
}

// bad is a line the import cannot write, as the store's refusal (it passes a transaction's
// error translation unchanged, and reads as a sentence in the report).
func bad(format string, args ...any) error { return persist.Invalid(format, args...) }

// decode reads a line into v; a malformed line is bad.
func decode(line []byte, v any) error {
	if err := json.Unmarshal(line, v); err != nil {
		return bad("malformed line: %v", err)
	}
	return nil
}
