package persist

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Statements sent ahead. A request of a group runs its statements one after another on the
// group's connection, so every statement is a round trip the whole group waits for. A mutation
// whose common path is known before it runs (a post: the nonce look-up, the channel, the
// membership, the insert) sends that path's statements in the round trip of its savepoint, the
// insert included, then runs as ever: each statement it asks for that matches the next one sent
// ahead (same SQL, same arguments) is answered from what came back. A request that leaves the
// path (a refusal, a replay, a guest's budget) either fails, and its savepoint undoes the write
// sent ahead, or asks for a statement that was not sent while a write sent ahead stands: that
// statement fails with errAheadMissed, and the group undoes the request and runs it again one
// statement at a time (see tryGroup). Guards stay in one place, run on the rows they read.

// errAheadMissed is the failure of a request that left the path it sent ahead after a write
// of that path ran.
var errAheadMissed = errors.New("persist: a request left the statements it sent ahead")

// sentAhead is what came back for a request whose statements a group sent with others'.
type sentAhead struct {
	savepoint string
	rows      []*aheadRow
}

// sendGroupAhead sends in one round trip the statements of the requests from group[from] on
// that say them before they run (batchRequest.prepare), each behind a savepoint of its own, and
// returns the index after the last request it covered and how many it sent. A statement that fails ends the
// pipeline: the requests after its own are not sent (the group sends them again once that one
// is settled).
func (tx *Tx) sendGroupAhead(ctx context.Context, group []*batchRequest, from int) (end, sent int, err error) {
	type sending struct {
		at    int
		stmts []aheadStatement
	}
	var run []sending
	for end = from; end < len(group); end++ {
		r := group[end]
		if r.ctx.Err() != nil {
			continue // skipped at its turn
		}
		if r.prepare == nil {
			break
		}
		stmts, planned := r.prepare(tx)
		if stmts == nil {
			break
		}
		r.planned = planned
		run = append(run, sending{at: end, stmts: stmts})
	}
	if len(run) == 0 {
		return from + 1, 0, nil
	}
	b := &pgx.Batch{}
	for _, sr := range run {
		b.Queue("SAVEPOINT " + batchSavepoint + "_" + strconv.Itoa(sr.at))
		for _, st := range sr.stmts {
			b.Queue(st.sql, st.args...)
		}
	}
	br := tx.tx.SendBatch(tx.group.ctx, b)
	types := tx.tx.Conn().TypeMap()
	var failed error
	for _, sr := range run {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return 0, 0, err
		}
		sent := &sentAhead{savepoint: batchSavepoint + "_" + strconv.Itoa(sr.at)}
		for _, st := range sr.stmts {
			r := &aheadRow{aheadStatement: st, types: types, err: failed}
			if failed == nil {
				r.err = r.read(br)
				failed = r.err
			}
			sent.rows = append(sent.rows, r)
		}
		group[sr.at].sent = sent
		if failed != nil {
			end = sr.at + 1
			break
		}
	}
	if err := br.Close(); failed == nil && err != nil {
		return 0, 0, err
	}
	return end, len(run), nil
}

// aheadStatement is one statement of the path sent ahead; write says it changes rows.
type aheadStatement struct {
	sql   string
	args  []any
	write bool
}

// aheadRow is the first row (or the error) of a statement sent ahead.
type aheadRow struct {
	aheadStatement
	types  *pgtype.Map
	fields []pgconn.FieldDescription
	values [][]byte
	found  bool
	err    error
}

func (r *aheadRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.found {
		return pgx.ErrNoRows
	}
	return pgx.ScanRow(r.types, r.fields, r.values, dest...)
}

// read takes the statement's first row from the pipeline; the values are copied because the
// connection reuses its buffer for the next result.
func (r *aheadRow) read(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	if rows.Next() {
		r.found = true
		r.fields = slices.Clone(rows.FieldDescriptions())
		for _, v := range rows.RawValues() {
			r.values = append(r.values, bytes.Clone(v))
		}
	}
	rows.Close()
	return rows.Err()
}

// mayGoAhead reports whether a request may send statements ahead: it runs in a group, has sent
// nothing yet (its savepoint is pending, to undo what goes ahead) and is not being run again
// after a miss.
func (tx *Tx) mayGoAhead() bool {
	return tx.group != nil && tx.group.savepoint != "" && !tx.group.noAhead
}

// sendAhead sends the pending savepoint and stmts in one round trip and keeps their rows for
// the statements the request will ask for. A statement that fails ends the pipeline (the
// subtransaction is aborted): it and the ones after it carry its error.
func (tx *Tx) sendAhead(ctx context.Context, stmts []aheadStatement) error {
	b := &pgx.Batch{}
	b.Queue(tx.group.savepoint)
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	tx.group.savepoint = ""
	tx.group.sentAhead = true
	br := tx.tx.SendBatch(tx.group.ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return err
	}
	types := tx.tx.Conn().TypeMap()
	var failed error
	for _, st := range stmts {
		r := &aheadRow{aheadStatement: st, types: types, err: failed}
		if failed == nil {
			r.err = r.read(br)
			failed = r.err
		}
		tx.group.ahead = append(tx.group.ahead, r)
	}
	if err := br.Close(); failed == nil {
		return err
	}
	return nil
}

// takeAhead answers a statement from the path sent ahead when it is the next one there.
func (tx *Tx) takeAhead(sql string, args []any) (*aheadRow, bool) {
	if len(tx.group.ahead) == 0 {
		return nil, false
	}
	r := tx.group.ahead[0]
	if r.sql != sql || !sameArgs(r.args, args) {
		return nil, false
	}
	tx.group.ahead = tx.group.ahead[1:]
	return r, true
}

// sameArgs is reflect.DeepEqual of two statements' arguments, with the kinds statements mostly
// take compared directly (it is asked once per statement of every post).
func sameArgs(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case string:
			if y, ok := b[i].(string); !ok || x != y {
				return false
			}
		case int64:
			if y, ok := b[i].(int64); !ok || x != y {
				return false
			}
		case bool:
			if y, ok := b[i].(bool); !ok || x != y {
				return false
			}
		default:
			if !reflect.DeepEqual(a[i], b[i]) {
				return false
			}
		}
	}
	return true
}

// offPath is the check of a statement that is not the next one sent ahead.
func (tx *Tx) offPath() error {
	if tx.group.strict {
		// Later requests' statements ran after this request's: one more of its own would run
		// after them.
		tx.group.ahead = nil
		return errAheadMissed
	}
	return tx.leaveAhead()
}

// leaveAhead forgets what is left of the path sent ahead, and reports errAheadMissed when a
// write is among it: the request is past the point where it would have asked for that write, so
// the write stands for nothing the request did.
func (tx *Tx) leaveAhead() error {
	left := tx.group.ahead
	tx.group.ahead = nil
	for _, r := range left {
		if r.write {
			return errAheadMissed
		}
	}
	return nil
}
