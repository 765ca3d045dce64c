package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Start says where a follower's consumer begins when it is created: after a cursor, at the
// stream's end, or at a time. The zero Start begins at the stream's first retained event.
type Start struct {
	// After delivers the events whose cursor is greater than After.
	After int64
	// AtEnd delivers only what the stream stores from now on.
	AtEnd bool
	// Since delivers the events stored at or after Since.
	Since time.Time
}

// FollowConfig says what to follow and how.
type FollowConfig struct {
	// NATS is the connection whose JetStream holds the workspace streams. Required.
	NATS *nats.Conn
	// WorkspaceID names the stream. Required.
	WorkspaceID string
	// Durable names a durable consumer that every replica shares: each event goes to one of
	// them and must be acknowledged (Msg.Ack, Nak or Term). Empty follows with an ordered
	// consumer of this process alone, whose events need no acknowledgement. Default "".
	Durable string
	// Description describes the durable consumer. Default "".
	Description string
	// Types keeps only events of these types in channels and direct conversations (not
	// workspace-wide ones). Default nil: every event.
	Types []string
	// WorkspaceWide keeps, with Types, the workspace-wide events of those types too. The filter
	// is the consumer's, so JetStream never hands over the events it leaves out. Default false.
	WorkspaceWide bool
	// Start is asked where a consumer begins each time one is created: at the first start, and
	// again when the durable consumer was deleted or the stream rebuilt. An ordered consumer
	// that has delivered events resumes after the last one instead. Default nil: Start{AtEnd: true}.
	Start func(ctx context.Context) (Start, error)
	// AckWait is how long a durable consumer waits for an acknowledgement. Default 30s.
	AckWait time.Duration
	// MaxAckPending bounds a durable consumer's unacknowledged events; 1 hands them out one at
	// a time, in cursor order. Default 1000.
	MaxAckPending int
	// MaxDeliver bounds the deliveries of one event to a durable consumer. Default -1 (no limit).
	MaxDeliver int
	// PullMaxMessages is how many events are fetched ahead. Default 0: the client's default.
	PullMaxMessages int
	// OnLive, when set, is called each time a consumer is about to start, before its first
	// event, with the first cursor it may deliver (for Start.AtEnd: the stream's end at that
	// moment, plus one). It must not block.
	OnLive func(first int64)
	// OnMissing, when set, is called each time a look finds no stream, in the follower's
	// goroutine, before it waits to look again. It may read the database, and must not block
	// for long.
	OnMissing func(ctx context.Context)
	// Handle receives the events, one at a time in stream order. Required.
	Handle func(ctx context.Context, m Msg)
	// Logger receives problems that Follow retries. Default slog.Default().
	Logger *slog.Logger
	// Retry is the longest wait before looking again for a stream that does not exist yet, or
	// again after a failure; a stream-created advisory wakes the follower earlier. Default 1s.
	Retry time.Duration
	// WhileStreamExists makes Follow return, instead of waiting, when the stream does not exist
	// or is deleted, so that a workspace whose stream the relay retired costs its reader
	// nothing; the reader follows it again when Discover reports it created. Its durable
	// consumer is marked so, and the relay retires a stream under it once it is caught up.
	// Default false.
	WhileStreamExists bool
}

// metaWhileStreamExists marks, in its metadata, a durable consumer whose follower leaves with
// the stream: the relay may retire the stream under it once it is caught up.
const metaWhileStreamExists = "natter_while_stream_exists"

// Msg is an event handed to a follower, with its acknowledgement. For an ordered follower the
// acknowledgement methods do nothing.
type Msg struct {
	Event
	msg     jetstream.Msg
	durable bool
}

// Ack says the event is handled.
func (m Msg) Ack() {
	if m.durable {
		_ = m.msg.Ack()
	}
}

// Nak asks for the event again after delay (0: at once).
func (m Msg) Nak(delay time.Duration) {
	if m.durable {
		_ = m.msg.NakWithDelay(delay)
	}
}

// InProgress says the event is still being worked on, restarting its ack wait: a long handler
// calls it every AckWait/3 or so, so only a replica that died lets the wait lapse.
func (m Msg) InProgress() {
	if m.durable {
		_ = m.msg.InProgress()
	}
}

// Term says the event must never be delivered again.
func (m Msg) Term() {
	if m.durable {
		_ = m.msg.Term()
	}
}

// Follow follows a workspace stream until ctx ends, then stops its consumer (an ordered one is
// deleted) and returns nil once no Handle call is under way. It waits for a stream that does not
// exist yet (unless WhileStreamExists), and creates the consumer again when it was deleted or
// the stream rebuilt. It returns an error only for an invalid cfg.
func Follow(ctx context.Context, cfg FollowConfig) error {
	if cfg.NATS == nil || cfg.WorkspaceID == "" || cfg.Handle == nil {
		return errors.New("streams: FollowConfig.NATS, WorkspaceID and Handle are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Start == nil {
		cfg.Start = func(context.Context) (Start, error) { return Start{AtEnd: true}, nil }
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.MaxAckPending == 0 {
		cfg.MaxAckPending = 1000
	}
	if cfg.MaxDeliver == 0 {
		cfg.MaxDeliver = -1
	}
	if cfg.Retry == 0 {
		cfg.Retry = time.Second
	}
	if cfg.AckWait < 0 || cfg.MaxAckPending < 0 || cfg.Retry < 0 || cfg.PullMaxMessages < 0 {
		return fmt.Errorf("streams: FollowConfig.AckWait, MaxAckPending, Retry and PullMaxMessages must not be negative")
	}
	js, err := jetstream.New(cfg.NATS)
	if err != nil {
		return fmt.Errorf("streams: jetstream: %w", err)
	}
	f := &follower{cfg: cfg, js: js, stream: StreamName(cfg.WorkspaceID),
		logger: cfg.Logger.With("workspace_id", cfg.WorkspaceID, "consumer", cfg.Durable)}
	f.run(ctx)
	return nil
}

type follower struct {
	cfg    FollowConfig
	js     jetstream.JetStream
	stream string
	logger *slog.Logger
	last   int64 // the last cursor handed to an ordered follower's Handle; 0 before any
}

func (f *follower) run(ctx context.Context) {
	created := make(chan struct{}, 1)
	if !f.cfg.WhileStreamExists { // which never waits for a stream
		// Subscribed before the first look, so a stream created in between still wakes us.
		sub, err := f.cfg.NATS.Subscribe(streamCreatedAdvisory(f.stream), func(*nats.Msg) {
			select {
			case created <- struct{}{}:
			default:
			}
		})
		if err != nil {
			f.logger.Warn("follower cannot hear of new streams; it looks again every retry", "error", err)
		} else {
			defer func() { _ = sub.Unsubscribe() }()
		}
	}
	wait := time.NewTimer(0)
	defer wait.Stop()
	delay := time.Duration(0)
	for {
		advised := false
		select {
		case <-ctx.Done():
			return
		case <-created:
			advised = true
		case <-wait.C:
		}
		consumed, gone := f.consumeUntilLost(ctx)
		if gone && f.cfg.WhileStreamExists {
			return
		}
		delay = nextLook(delay, f.cfg.Retry, consumed, advised)
		if !wait.Stop() {
			select {
			case <-wait.C:
			default:
			}
		}
		wait.Reset(delay)
	}
}

// nextLook is the wait before the follower looks for its stream again, after a wait of delay:
// none after consuming, and after a failed look twice the last wait (from 25 ms up to retry).
// A look the stream-created advisory prompted starts again from 25 ms when it found nothing:
// the server announces a stream before it can be looked up (nats-server registers it with
// the account after the advisory), and no second advisory comes. Doubling there made a
// follower miss its stream for up to retry, long enough, under load, for the relay to retire
// an idle stream it had just created, with the events published into it meanwhile.
func nextLook(delay, retry time.Duration, consumed, advised bool) time.Duration {
	if consumed {
		return 0
	}
	if advised {
		delay = 0
	}
	return min(max(2*delay, 25*time.Millisecond), retry)
}

// consumeUntilLost starts the consumer and handles events until ctx ends or the consumer is
// lost. It reports whether it consumed at all (false: the stream is missing or a call failed,
// and the caller waits before trying again) and whether the stream was found missing.
func (f *follower) consumeUntilLost(ctx context.Context) (consumed, gone bool) {
	cons, first, err := f.consumer(ctx)
	if err != nil {
		gone = errors.Is(err, jetstream.ErrStreamNotFound)
		if !gone && ctx.Err() == nil {
			f.logger.Warn("follower cannot start its consumer", "error", err)
		}
		if gone && f.cfg.OnMissing != nil && ctx.Err() == nil {
			f.cfg.OnMissing(ctx)
		}
		return false, gone
	}
	lost := make(chan struct{}, 1)
	var (
		mu       sync.Mutex
		stopped  bool
		handling sync.WaitGroup
	)
	handle := func(m jetstream.Msg) {
		mu.Lock()
		if stopped {
			mu.Unlock()
			if f.cfg.Durable != "" {
				_ = m.Nak() // another replica, or the next start, handles it
			}
			return
		}
		handling.Add(1)
		mu.Unlock()
		defer handling.Done()
		f.deliver(ctx, m)
	}
	opts := []jetstream.PullConsumeOpt{jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
			errors.Is(err, jetstream.ErrStreamNotFound) {
			select {
			case lost <- struct{}{}:
			default:
			}
		}
	})}
	if f.cfg.PullMaxMessages > 0 {
		opts = append(opts, jetstream.PullMaxMessages(f.cfg.PullMaxMessages))
	}
	if f.cfg.OnLive != nil {
		f.cfg.OnLive(first) // before the first event can arrive
	}
	cc, err := cons.Consume(handle, opts...)
	if err != nil {
		if ctx.Err() == nil {
			f.logger.Warn("follower cannot consume", "error", err)
		}
		return false, false
	}
	select {
	case <-ctx.Done():
	case <-lost:
		if ctx.Err() == nil && !f.cfg.WhileStreamExists {
			f.logger.Info("follower lost its consumer; starting it again")
		}
	}
	mu.Lock()
	stopped = true
	mu.Unlock()
	cc.Stop()
	handling.Wait()
	if ctx.Err() != nil && f.cfg.Durable == "" {
		// The server would keep an ordered consumer for minutes after its last pull; gone at
		// once, it holds neither the server's memory nor the stream (the relay retires only a
		// stream nobody reads).
		if info := cons.CachedInfo(); info != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = f.js.DeleteConsumer(dctx, f.stream, info.Name)
			cancel()
		}
	}
	return true, false
}

// deliver decodes one message and hands it to Handle; an ordered follower skips what it has
// already handed on (a reset consumer may replay).
func (f *follower) deliver(ctx context.Context, m jetstream.Msg) {
	e, err := decodeMsg(m)
	if err != nil {
		f.logger.Warn("follower drops a message it cannot read", "subject", m.Subject(), "error", err)
		if f.cfg.Durable != "" {
			_ = m.Term()
		}
		return
	}
	if f.cfg.Durable == "" {
		if e.Cursor <= f.last {
			return
		}
		f.last = e.Cursor
	}
	f.cfg.Handle(ctx, Msg{Event: e, msg: m, durable: f.cfg.Durable != ""})
}

// consumer finds or creates the consumer and returns the first cursor it may deliver.
func (f *follower) consumer(ctx context.Context) (jetstream.Consumer, int64, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := f.js.Stream(cctx, f.stream)
	if err != nil {
		return nil, 0, err
	}
	if f.cfg.Durable != "" {
		return f.durable(cctx, stream)
	}
	start := Start{After: f.last}
	if f.last == 0 {
		if start, err = f.cfg.Start(cctx); err != nil {
			return nil, 0, err
		}
	}
	first, oc := f.position(stream, start)
	oc.FilterSubjects = f.filter()
	cons, err := stream.OrderedConsumer(cctx, oc)
	return cons, first, err
}

func (f *follower) durable(ctx context.Context, stream jetstream.Stream) (jetstream.Consumer, int64, error) {
	cons, err := stream.Consumer(ctx, f.cfg.Durable)
	if err == nil {
		if cc := cons.CachedInfo().Config; cc.AckWait != f.cfg.AckWait || !slices.Equal(filterOf(cc), f.filter()) ||
			cc.Metadata[metaWhileStreamExists] != f.metadata()[metaWhileStreamExists] {
			// Made by an older release or under another setting: the ack wait, the filter and
			// the mark follow the config.
			cc.AckWait, cc.FilterSubjects, cc.FilterSubject, cc.Metadata = f.cfg.AckWait, f.filter(), "", f.metadata()
			cons, err = stream.UpdateConsumer(ctx, cc)
		}
	}
	if err == nil {
		return cons, int64(cons.CachedInfo().Delivered.Stream) + 1, nil
	}
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, 0, err
	}
	start, err := f.cfg.Start(ctx)
	if err != nil {
		return nil, 0, err
	}
	first, oc := f.position(stream, start)
	cons, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:        f.cfg.Durable,
		Description:    f.cfg.Description,
		DeliverPolicy:  oc.DeliverPolicy,
		OptStartSeq:    oc.OptStartSeq,
		OptStartTime:   oc.OptStartTime,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        f.cfg.AckWait,
		MaxAckPending:  f.cfg.MaxAckPending,
		MaxDeliver:     f.cfg.MaxDeliver,
		FilterSubjects: f.filter(),
		Metadata:       f.metadata(),
	})
	if errors.Is(err, jetstream.ErrConsumerExists) { // another replica created it meanwhile
		cons, err = stream.Consumer(ctx, f.cfg.Durable)
	}
	return cons, first, err
}

// filterOf is a consumer's filter as one list (a server may keep a single one apart).
func filterOf(cc jetstream.ConsumerConfig) []string {
	if cc.FilterSubject != "" {
		return append([]string{cc.FilterSubject}, cc.FilterSubjects...)
	}
	return cc.FilterSubjects
}

// position turns a Start into a deliver policy, with the first cursor it may deliver (0 for a
// start by time, which the stream decides).
func (f *follower) position(stream jetstream.Stream, s Start) (int64, jetstream.OrderedConsumerConfig) {
	switch {
	case s.AtEnd:
		first := stream.CachedInfo().State.LastSeq + 1
		return int64(first), jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: first}
	case !s.Since.IsZero():
		since := s.Since
		return 0, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &since}
	case s.After > 0:
		return s.After + 1, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(s.After) + 1}
	default:
		return int64(stream.CachedInfo().State.FirstSeq), jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	}
}

func (f *follower) metadata() map[string]string {
	if !f.cfg.WhileStreamExists {
		return nil
	}
	return map[string]string{metaWhileStreamExists: "true"}
}

func (f *follower) filter() []string {
	if len(f.cfg.Types) == 0 {
		return nil
	}
	out := make([]string, 0, 2*len(f.cfg.Types))
	for _, t := range f.cfg.Types {
		out = append(out, PlaceEventSubjects(f.cfg.WorkspaceID, t))
		if f.cfg.WorkspaceWide {
			out = append(out, WorkspaceEventSubject(f.cfg.WorkspaceID, t))
		}
	}
	return out
}

// streamCreatedAdvisory is the subject JetStream announces a new stream on.
func streamCreatedAdvisory(stream string) string {
	return "$JS.EVENT.ADVISORY.STREAM.CREATED." + stream
}

// DeleteDurable deletes a durable consumer of a workspace stream for good (its follower stopped
// first); a consumer or stream that is already gone is no error.
func DeleteDurable(ctx context.Context, nc *nats.Conn, workspaceID, durable string) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	err = js.DeleteConsumer(ctx, StreamName(workspaceID), durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	return err
}
