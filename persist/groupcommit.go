package persist

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// Group commit. Every event-writing transaction of a workspace queues on its event head row
// until commit, so one workspace commits one transaction at a time, and each spends a WAL flush
// and a dozen round trips of its own. Batch lets the mutations that arrive while a commit is in
// flight share the next transaction: each runs under its own savepoint, so a refused request
// leaves the others' work in place; their events are appended in arrival order (EventAppend),
// and every request is answered after the one commit. A request that arrives when nothing is in
// flight starts at once, so a lone post waits for nobody.

// batchMax bounds the requests of one transaction. Each request that writes takes a
// subtransaction id, and past 64 of them Postgres stops caching them per backend, which slows
// every snapshot taken meanwhile.
const batchMax = 48

// batchTimeout bounds one group transaction, retries included: the requests it carries no
// longer cancel their own statements (a request giving up must not break the connection the
// others share).
const batchTimeout = 30 * time.Second

// batchSavepoint is the savepoint each request of a group runs under; a request whose
// statements the group sent with others' has its own, numbered (sendGroupAhead).
const batchSavepoint = "natter_batch"

type batchRequest struct {
	ctx   context.Context
	fn    func(tx *Tx) (any, error)
	place func(val any, cursors map[string]int64)
	val   any
	err   error
	done  chan struct{}
	// prepare, when set, says the statements fn will send ahead before it runs, so the group
	// sends them with its other requests' (sendGroupAhead), and what fn must decide the same
	// way (planned, handed to fn in Tx.planned); sent is what came back for it.
	prepare func(tx *Tx) ([]aheadStatement, any)
	planned any
	sent    *sentAhead
}

// batchQueue is one key's queue; running says a goroutine is draining it.
type batchQueue struct {
	pending []*batchRequest
	running bool
}

type batcher struct {
	mu     sync.Mutex
	queues map[string]*batchQueue
}

// EventCarrier is a value that holds the events its mutation appended. In a group, events are
// written last, at the commit, so their cursors are known only then: the group hands each event
// of an answer to place, which sets its cursor.
type EventCarrier interface {
	EachEvent(place func(*Event))
}

// Batch runs fn in the next group transaction of key (a workspace id: the mutations of one
// workspace serialize on its event head anyway) and returns its value once that transaction
// has committed, its events' cursors set. fn follows the rules of WithTx, and one more: it may
// run under a savepoint that is rolled back, so it must leave its outcome only in its return
// value. Errors are translated.
func Batch[T any, PT interface {
	*T
	EventCarrier
}](ctx context.Context, s *Store, key string, fn func(tx *Tx) (T, error)) (T, error) {
	return batch[T, PT](ctx, s, key, fn, nil)
}

// batch is Batch with the request's prepare (see batchRequest).
func batch[T any, PT interface {
	*T
	EventCarrier
}](ctx context.Context, s *Store, key string, fn func(tx *Tx) (T, error), prepare func(tx *Tx) ([]aheadStatement, any)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	req := &batchRequest{ctx: ctx, done: make(chan struct{}), prepare: prepare,
		fn: func(tx *Tx) (any, error) {
			v, err := fn(tx)
			return &v, err
		},
		place: func(v any, cursors map[string]int64) {
			PT(v.(*T)).EachEvent(func(e *Event) {
				if c, ok := cursors[e.ID]; ok {
					e.Cursor = c
				}
			})
		}}
	s.batches.submit(s, key, req)
	// The request is answered even when its caller gives up: once a group holds it, its outcome
	// is the group's, and a caller that stopped waiting would not learn it anyway.
	<-req.done
	if req.err != nil {
		return zero, translate(req.err)
	}
	return *req.val.(*T), nil
}

func (b *batcher) submit(s *Store, key string, req *batchRequest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queues == nil {
		b.queues = map[string]*batchQueue{}
	}
	q := b.queues[key]
	if q == nil {
		q = &batchQueue{}
		b.queues[key] = q
	}
	q.pending = append(q.pending, req)
	if !q.running {
		q.running = true
		go b.drain(s, key, q)
	}
}

// drain runs the key's queue, one group at a time, until it is empty.
func (b *batcher) drain(s *Store, key string, q *batchQueue) {
	for {
		b.mu.Lock()
		n := min(len(q.pending), batchMax)
		if n == 0 {
			q.running = false
			delete(b.queues, key)
			b.mu.Unlock()
			return
		}
		group := q.pending[:n:n]
		q.pending = q.pending[n:]
		b.mu.Unlock()
		s.runGroup(key, group)
	}
}

// runGroup runs one group transaction and answers every request in it.
func (s *Store) runGroup(key string, group []*batchRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	var touched []string
	var revoked []Revocation
	var appended []Event
	var err error
	for attempt := 1; ; attempt++ {
		touched, revoked, appended, err = s.tryGroup(ctx, key, group)
		if err == nil || attempt == 5 || !retryable(err) {
			break
		}
		time.Sleep(time.Duration(rand.IntN(4*attempt)+1) * time.Millisecond)
	}
	if err == nil {
		// Handed off before the wake-up goes out, so the pass it starts finds them.
		if fn := s.handOff.Load(); fn != nil && len(appended) > 0 {
			(*fn)(appended)
		}
		if len(touched) > 0 && s.committed != nil {
			s.committed(touched)
		}
		s.announceRevoked(revoked)
	}
	for _, r := range group {
		if err != nil && r.err == nil {
			r.val, r.err = nil, err
		}
		close(r.done)
	}
}

// HandOffEvents makes fn receive the events of every group this store commits, with their
// cursors, after the commit and before OnEventsCommitted: the relay publishes them without
// reading them back (the events of other transactions, and of other replicas, it reads from the
// log). One receiver at a time; the returned function removes fn unless another replaced it.
// fn must not block.
func (s *Store) HandOffEvents(fn func([]Event)) (remove func()) {
	p := &fn
	s.handOff.Store(p)
	return func() { s.handOff.CompareAndSwap(p, nil) }
}

// tryGroup is one attempt at a group: every request under its savepoint, in arrival order (the
// statements of consecutive requests that say them beforehand sent first, together, see
// sendGroupAhead), then the queued events, then the commit. A request's own failure is its answer; a failure that may pass on a
// retry (a deadlock, a serialization failure) fails the whole attempt, to be run again.
func (s *Store) tryGroup(ctx context.Context, key string, group []*batchRequest) (touched []string, revoked []Revocation, appended []Event, err error) {
	gtx, err := s.beginGroupTx(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() { _ = gtx.Rollback(context.WithoutCancel(ctx)) }()
	tx := newTx(gtx, s.now(), &txGroup{ctx: ctx, key: key})
	for _, r := range group {
		r.val, r.err, r.planned, r.sent = nil, nil, nil, nil
	}
	covered := 0 // the requests before it went through sendGroupAhead
	for i, r := range group {
		if r.sent == nil {
			// A request whose statements went ahead is the group's; any other is skipped when
			// its caller has given up.
			if err := r.ctx.Err(); err != nil {
				r.err = err
				continue
			}
			if i >= covered {
				var n int
				if covered, n, err = tx.sendGroupAhead(ctx, group, i); err != nil {
					return nil, nil, nil, err
				}
				if n > 1 {
					s.aheadTogether.Add(int64(n))
				}
			}
		}
		onPath, err := s.runRequest(ctx, tx, r)
		if err != nil {
			return nil, nil, nil, err
		}
		if r.sent != nil && !onPath {
			// Rolling it back to its savepoint undid the requests sent after it: they are sent
			// again.
			for _, later := range group[i+1 : max(covered, i+1)] {
				later.sent, later.planned = nil, nil
			}
			covered = i + 1
		}
	}
	cursors, err := tx.commitGroup(gtx)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, r := range group {
		if r.err == nil && r.val != nil {
			r.place(r.val, cursors)
		}
	}
	return tx.touched, tx.revoked, tx.group.appended, nil
}

// runRequest runs one request of a group under its savepoint: answered from the statements sent
// ahead for it when there are some, run again one statement at a time when it leaves them, rolled
// back to its savepoint when it fails. onPath reports that it ended on the statements sent ahead
// (or had none), so that what was sent after them stands; err is a failure of the whole group.
func (s *Store) runRequest(ctx context.Context, tx *Tx, r *batchRequest) (onPath bool, err error) {
	g := tx.group
	mark := tx.mark()
	if r.sent != nil {
		g.savepoint, g.savepointName, g.ahead, g.strict = "", r.sent.savepoint, r.sent.rows, true
	} else {
		g.savepoint, g.savepointName = "SAVEPOINT "+batchSavepoint, batchSavepoint
	}
	g.planned, g.sentAhead = r.planned, false
	v, err := r.fn(tx)
	if err == nil {
		err = tx.leaveAhead()
	}
	if g.sentAhead || r.sent != nil {
		s.aheadSent.Add(1)
	}
	g.ahead, g.strict = nil, false
	onPath = err == nil
	if errors.Is(err, errAheadMissed) {
		// The request left the path it sent ahead: undo it and run it again, one statement at
		// a time, with what it decided before (its message id).
		s.aheadMissed.Add(1)
		mark.restore(tx)
		if _, rerr := tx.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+g.savepointName); rerr != nil {
			return false, rerr
		}
		g.savepoint, g.savepointName, g.noAhead, g.planned = "SAVEPOINT "+batchSavepoint, batchSavepoint, true, r.planned
		v, err = r.fn(tx)
		g.noAhead = false
	}
	g.planned = nil
	if err == nil {
		r.val = v
		return onPath, nil
	}
	if retryable(err) {
		return false, err
	}
	r.err = err
	if mark.restore(tx) {
		return false, nil // it failed before its savepoint was sent: nothing to undo
	}
	if _, rerr := tx.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+g.savepointName); rerr != nil {
		return false, errors.Join(err, rerr)
	}
	return false, nil
}

// txMark is what a transaction had recorded before a request of its group ran, so the request's
// share can be forgotten when its savepoint is rolled back.
type txMark struct {
	touched, revoked, queued int
}

func (tx *Tx) mark() txMark {
	return txMark{touched: len(tx.touched), revoked: len(tx.revoked), queued: len(tx.queued)}
}

// restore forgets what the request recorded. It reports whether the savepoint was never sent
// (the request failed before its first statement), in which case there is nothing to roll back.
func (m txMark) restore(tx *Tx) bool {
	tx.touched, tx.revoked, tx.queued = tx.touched[:m.touched], tx.revoked[:m.revoked], tx.queued[:m.queued]
	if tx.group.savepoint != "" {
		tx.group.savepoint = ""
		return true
	}
	return false
}

// BatchInPlace is Batch for a mutation of a channel or direct conversation, grouped with the
// other mutations of its workspace.
func BatchInPlace[T any, PT interface {
	*T
	EventCarrier
}](ctx context.Context, s *Store, p Place, fn func(tx *Tx) (T, error)) (T, error) {
	return Batch[T, PT](ctx, s, s.placeKey(ctx, p), fn)
}

// placeKey is the group key of a mutation of a channel or direct conversation.
func (s *Store) placeKey(ctx context.Context, p Place) string {
	if p.ChannelID == "" {
		return s.workspaceKey(ctx, "dms", p.ID())
	}
	return s.workspaceKey(ctx, "channels", p.ID())
}

// BatchOnMessage is Batch for a mutation of a message (a reply to it, a reaction), grouped with
// the other mutations of its workspace.
func BatchOnMessage[T any, PT interface {
	*T
	EventCarrier
}](ctx context.Context, s *Store, messageID string, fn func(tx *Tx) (T, error)) (T, error) {
	return Batch[T, PT](ctx, s, s.workspaceKey(ctx, "messages", messageID), fn)
}

// workspaceCacheMax bounds the ids whose workspace the store remembers; past it the memory
// starts over.
const workspaceCacheMax = 100_000

// workspaceCache remembers the workspace of channels, direct conversations and messages: none
// of them ever moves to another workspace.
type workspaceCache struct {
	mu sync.Mutex
	of map[string]string
}

// workspaceKey names the group of a mutation of the row id of table: its workspace. A row
// that cannot be read is its own key; the mutation then reports why.
func (s *Store) workspaceKey(ctx context.Context, table, id string) string {
	c := &s.workspaces
	c.mu.Lock()
	ws, ok := c.of[id]
	c.mu.Unlock()
	if ok {
		return ws
	}
	if err := s.pool.QueryRow(ctx, `SELECT workspace_id FROM `+table+` WHERE id = $1`, id).Scan(&ws); err != nil {
		return table + ":" + id
	}
	c.mu.Lock()
	if c.of == nil || len(c.of) >= workspaceCacheMax {
		c.of = map[string]string{}
	}
	c.of[id] = ws
	c.mu.Unlock()
	return ws
}
