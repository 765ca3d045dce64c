package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// postToken finds the chaos post a payload is about.
var postToken = regexp.MustCompile(`chaos-p\d+-\d{5}`)

// receipt is what one reader (a socket, the subscription endpoint, a bot) got: the posts'
// tokens in arrival order, every event cursor, and the problems it saw on the way.
type receipt struct {
	mu       sync.Mutex
	tokens   []string
	count    map[string]int
	last     int64
	problems []string
}

func newReceipt() *receipt { return &receipt{count: map[string]int{}} }

// add records one event; cursors must rise strictly (no duplicate, no reordering).
func (r *receipt) add(cursor int64, payload []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cursor <= r.last {
		r.problems = append(r.problems, fmt.Sprintf("cursor %d after %d", cursor, r.last))
		return
	}
	r.last = cursor
	if tok := postToken.Find(payload); tok != nil {
		r.tokens = append(r.tokens, string(tok))
		r.count[string(tok)]++
	}
}

func (r *receipt) position() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// missing counts the acknowledged posts not received yet.
func (r *receipt) missing(acked []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, tok := range acked {
		if r.count[tok] == 0 {
			n++
		}
	}
	return n
}

// followSocket keeps a WebSocket on the workspace open through the pool until ctx ends,
// resuming after the last cursor it received whenever the connection fails.
func followSocket(ctx context.Context, pool *replicaPool, k int, workspaceID string, r *receipt, reconnects chan<- time.Time) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		url := "ws" + strings.TrimPrefix(pool.pick(k+attempt), "http") + "/api/realtime/ws?workspace_id=" + workspaceID
		if c := r.position(); c > 0 {
			url += "&after_cursor=" + persist.FormatCursor(c)
		}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, br, _, err := ws.Dial(dctx, url)
		cancel()
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if attempt > 0 {
			select {
			case reconnects <- time.Now():
			default:
			}
		}
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		var in io.Reader = conn
		if br != nil {
			in = io.MultiReader(br, conn) // backfill sent with the handshake
		}
		rd := struct {
			io.Reader
			io.Writer
		}{in, conn}
		for {
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			msg, err := wsutil.ReadServerText(rd)
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					attempt = -1 // quiet, not failed: reconnecting is no recovery
				}
				break
			}
			var e struct {
				Cursor  string          `json:"cursor"`
				Payload json.RawMessage `json:"payload"`
			}
			if json.Unmarshal(msg, &e) != nil || e.Cursor == "" {
				continue // ephemeral
			}
			c, _ := persist.ParseCursor(e.Cursor)
			r.add(c, e.Payload)
		}
		stop()
		_ = conn.Close()
	}
}

// followNATS is a bot runtime on the cluster: it replays after its last cursor whenever it
// (re)connects or sees a gap, and follows the live subjects in between.
func followNATS(ctx context.Context, t *testing.T, urls string, tok persist.BotToken, r *receipt) {
	live := make(chan *nats.Msg, 8192)
	wake := make(chan struct{}, 1)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	nc, err := nats.Connect(urls, nats.Token(tok.Token), nats.CustomInboxPrefix(streams.BotInboxPrefix(tok.ID)),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { signal() }))
	if err != nil {
		t.Errorf("bot cannot connect: %v", err)
		return
	}
	defer nc.Close()
	subscribed := false
	replay := func() {
		for ctx.Err() == nil {
			body, _ := json.Marshal(map[string]any{"after_cursor": persist.FormatCursor(r.position()), "limit": 500})
			m, err := nc.RequestWithContext(ctx, streams.BotReplaySubject(tok.ID), body)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			var page struct {
				Events []struct {
					Cursor  string          `json:"cursor"`
					Payload json.RawMessage `json:"payload"`
				} `json:"events"`
				HasMore  bool     `json:"has_more"`
				Subjects []string `json:"subjects"`
			}
			if json.Unmarshal(m.Data, &page) != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if !subscribed {
				for _, s := range page.Subjects {
					if _, err := nc.ChanSubscribe(s, live); err != nil {
						t.Errorf("bot cannot subscribe: %v", err)
						return
					}
				}
				subscribed = true
			}
			for _, e := range page.Events {
				c, _ := persist.ParseCursor(e.Cursor)
				if c > r.position() {
					r.add(c, e.Payload)
				}
			}
			if !page.HasMore {
				return
			}
		}
	}
	replay()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			replay()
		case m := <-live:
			var e struct {
				Cursor  string          `json:"cursor"`
				Payload json.RawMessage `json:"payload"`
			}
			if json.Unmarshal(m.Data, &e) != nil {
				continue
			}
			c, _ := persist.ParseCursor(e.Cursor)
			switch pos := r.position(); {
			case c <= pos:
				// replayed already
			case c == pos+1:
				r.add(c, e.Payload)
			default:
				replay() // missed live events while away
			}
		}
	}
}
