package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/streams"
)

func (b *realtimeBundle) wsPath(after string) string {
	p := "/api/realtime/ws?workspace_id=" + b.ws.ID
	if after != "" {
		p += "&after_cursor=" + after
	}
	return p
}

// dial opens a socket as token after a cursor; the socket is attached to its workspace's feed
// once this returns.
func (b *realtimeBundle) dial(t *testing.T, token, after string) *servertest.Socket {
	t.Helper()
	s, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath(after), Token: token})
	require.Equal(t, http.StatusSwitchingProtocols, status)
	return s
}

// readCursors reads n events and returns their cursors.
func readCursors(t *testing.T, s *servertest.Socket, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for len(out) < n {
		out = append(out, s.Next(t).Cursor)
	}
	return out
}

func seq(from, to int) []string {
	out := []string{}
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// TestSocketVisibility gives each kind of reader a socket and checks what reaches it.
func TestSocketVisibility(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	owner, member, guest := b.dial(t, b.owner.Token, "2"), b.dial(t, b.member.Token, "2"), b.dial(t, b.guest.Token, "2")
	b.add(t, persist.EventInput{DirectConversationID: b.dm}) // 3
	b.add(t, persist.EventInput{ChannelID: b.general})       // 4
	b.add(t, persist.EventInput{Type: "workspace.updated"})  // 5
	b.add(t, persist.EventInput{ChannelID: b.guestChannel})  // 6: seen by all, the last event
	require.Equal(t, []string{"3", "4", "5", "6"}, readCursors(t, owner, 4))
	require.Equal(t, []string{"4", "5", "6"}, readCursors(t, member, 3))
	require.Equal(t, []string{"3", "6"}, readCursors(t, guest, 2))
	// Backfill applies the same rule.
	require.Equal(t, []string{"1", "3", "6"}, readCursors(t, b.dial(t, b.guest.Token, ""), 3))
}

func TestSocketAuthentication(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t, servertest.WithConfig(func(c *server.Config) { c.PublicURL = "https://chat.example.com" }))
	b.add(t, persist.EventInput{ChannelID: b.general}) // 3
	for _, proto := range []string{"natter.bearer.", "clickclack.bearer."} {
		t.Run("Subprotocol_"+strings.TrimSuffix(proto, ".bearer."), func(t *testing.T) {
			t.Parallel()
			s, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath("2"), Protocols: []string{"chat", proto + b.owner.Token}})
			require.Equal(t, http.StatusSwitchingProtocols, status)
			require.Equal(t, proto+b.owner.Token, s.Protocol, "the offered bearer subprotocol is echoed back")
			require.Equal(t, "3", s.Next(t).Cursor)
		})
	}
	t.Run("Cookie", func(t *testing.T) {
		t.Parallel()
		s, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath("2"), Cookie: &http.Cookie{Name: "cc_session", Value: b.owner.Token}})
		require.Equal(t, http.StatusSwitchingProtocols, status)
		require.Equal(t, "3", s.Next(t).Cursor)
	})
	t.Run("Origins", func(t *testing.T) {
		t.Parallel()
		for origin, want := range map[string]int{
			"https://evil.example.com":                         http.StatusForbidden,
			"https://chat.example.com":                         http.StatusSwitchingProtocols,
			"http://" + strings.TrimPrefix(b.h.URL, "http://"): http.StatusSwitchingProtocols,
		} {
			_, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath("2"), Token: b.owner.Token, Origin: origin})
			require.Equal(t, want, status, origin)
		}
	})
	t.Run("RefusedBeforeUpgrade", func(t *testing.T) {
		t.Parallel()
		stranger := b.h.NewUser(t)
		_, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath(""), Token: stranger.Token})
		require.Equal(t, http.StatusForbidden, status, "a non-member")
		_, status = b.h.DialSocket(t, servertest.Dial{Path: b.wsPath("")})
		require.Equal(t, http.StatusUnauthorized, status, "no credentials")
		_, status = b.h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=wsp_gone", Token: b.owner.Token})
		require.Equal(t, http.StatusNotFound, status, "an unknown workspace")
	})
}

// TestSocketRevocation logs the socket's session out: the next delivery, or the idle timer,
// closes it with 1008 and nothing more is sent.
func TestSocketRevocation(t *testing.T) {
	t.Parallel()
	t.Run("BeforeDelivering", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) {
			c.RevalidateInterval = time.Nanosecond
			c.SweepInterval = time.Hour
		}))
		s := b.dial(t, b.owner.Token, "2")
		b.h.Post(t, "/api/auth/logout", b.owner.Token, nil).RequireStatus(t, http.StatusOK)
		b.add(t, persist.EventInput{ChannelID: b.general})
		require.EqualValues(t, 1008, s.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
	})
	t.Run("AtOnceOnLogout", func(t *testing.T) {
		t.Parallel()
		// No periodic check would notice within the test: the logout's announcement does.
		b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) {
			c.RevalidateInterval = time.Hour
			c.SweepInterval = time.Hour
		}))
		// The second handshake is answered from the hub's cache; the logout must still end both
		// sockets, and refuse the reconnect.
		sockets := []*servertest.Socket{b.dial(t, b.owner.Token, "2"), b.dial(t, b.owner.Token, "2")}
		b.h.Post(t, "/api/auth/logout", b.owner.Token, nil).RequireStatus(t, http.StatusOK)
		for _, s := range sockets {
			require.EqualValues(t, 1008, s.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
		}
		_, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath("2"), Token: b.owner.Token})
		require.Equal(t, http.StatusUnauthorized, status, "a reconnect after the logout")
	})
	t.Run("OnTheIdleTimer", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = 20 * time.Millisecond }))
		s := b.dial(t, b.owner.Token, "2")
		b.h.Post(t, "/api/auth/logout", b.owner.Token, nil).RequireStatus(t, http.StatusOK)
		require.EqualValues(t, 1008, s.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
	})
}

func TestSocketResync(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	for _, c := range []string{"3", "abc"} {
		require.EqualValues(t, 4001, b.dial(t, b.owner.Token, c).ExpectClose(t), "CONTRACT §Events: 4001 resync required; cursor %q", c)
	}
}

// TestSocketTooSlow stops reading while events pile up: the bounded queue fills, the socket is
// closed with 1013, and a reconnect from the last cursor read gets the rest exactly once.
func TestSocketTooSlow(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.QueueBytes = 32 << 10; c.SendBuffer = 4096 }),
		servertest.WithConfig(func(c *server.Config) { c.Metrics = true }))
	// The client's buffer is small beside the 800 KiB below, so the queue fills, but not tiny:
	// a receive buffer far under loopback's 64 KiB segment makes the peer's window updates
	// rare, and a reader waking after the flood then waited on the kernel's zero-window probes
	// (once in CI, an i/o timeout reading the rest).
	s, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath("2"), Token: b.owner.Token, RecvBuffer: 128 << 10})
	require.Equal(t, http.StatusSwitchingProtocols, status)
	// Once the first event arrives the socket is live (its backfill handed over), so the flood
	// below goes through the bounded queue.
	b.add(t, persist.EventInput{ChannelID: b.general})
	require.Equal(t, "3", s.Next(t).Cursor)
	big := map[string]string{"body": strings.Repeat("x", 8<<10)}
	const n = 100
	for i := 0; i < n; i++ {
		b.add(t, persist.EventInput{ChannelID: b.general, Payload: big})
	}
	// Nothing is read until the server has given up on the socket: a reader that started at once
	// could keep up with the relay's pace and never fill the queue.
	require.Eventually(t, func() bool {
		return strings.Contains(string(b.h.Get(t, "/metrics", "").Body), `natter_realtime_closes_total{code="1013"} 1`)
	}, 20*time.Second, 20*time.Millisecond, "the socket that reads nothing is closed with 1013")
	last := 3
	for {
		f, ok := s.ReadFrame(t)
		if !ok || f.Header.OpCode == ws.OpClose {
			break
		}
		if f.Header.OpCode == ws.OpText {
			last++
		}
	}
	require.Less(t, last, n+3, "the slow socket was cut off")
	again := b.dial(t, b.owner.Token, strconv.Itoa(last))
	require.Equal(t, seq(last+1, n+3), readCursors(t, again, n+3-last))
}

func TestSocketControlFrames(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.PingInterval = 50 * time.Millisecond }))
	t.Run("PingIsAnswered", func(t *testing.T) {
		t.Parallel()
		s := b.dial(t, b.owner.Token, "2")
		s.Send(t, ws.NewPingFrame([]byte("hi")))
		for {
			f, ok := s.ReadFrame(t)
			require.True(t, ok)
			if f.Header.OpCode == ws.OpPong {
				require.Equal(t, "hi", string(f.Payload))
				return
			}
		}
	})
	t.Run("ClientCloseIsAnswered", func(t *testing.T) {
		t.Parallel()
		s := b.dial(t, b.owner.Token, "2")
		s.Send(t, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "bye")))
		require.Equal(t, ws.StatusNormalClosure, s.ExpectClose(t))
	})
	t.Run("HalfOpenIsReaped", func(t *testing.T) {
		t.Parallel()
		// A client that never answers pings: after two ping intervals of silence the server
		// drops the connection.
		s := b.dial(t, b.owner.Token, "2")
		pings := 0
		for {
			f, ok := s.ReadFrame(t)
			if !ok {
				break
			}
			if f.Header.OpCode == ws.OpPing {
				pings++
			}
		}
		require.Positive(t, pings)
	})
}

// TestSocketRouteWithoutUpgrade answers a plain GET with 426 JSON, without taking over the
// connection: the client's keep-alive connection serves the next request.
func TestSocketRouteWithoutUpgrade(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	r := b.h.Get(t, b.wsPath(""), b.owner.Token)
	r.RequireError(t, http.StatusUpgradeRequired, persist.CodeUpgradeRequired)
	require.Equal(t, "websocket", r.Header.Get("Upgrade"))
	b.h.Post(t, "/api/realtime/ephemeral", b.owner.Token, map[string]any{"workspace_id": b.ws.ID, "channel_id": b.general,
		"type": "typing.started"}).RequireStatus(t, http.StatusAccepted)
}

// TestWorkspaceDeleteClosesConnections deletes a workspace through the API while people hold
// sockets and a bot a NATS connection: the deletion is announced like a revocation, so they
// end at once (sockets with 1008), though no periodic check is due for an hour.
func TestWorkspaceDeleteClosesConnections(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = time.Hour }),
		servertest.WithBotAccess(func(c *streams.BotAccessConfig) { c.RevalidateInterval = time.Hour }))
	owner, member := b.dial(t, b.owner.Token, "2"), b.dial(t, b.member.Token, "2")
	_, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	nb, err := connectBot(t, b.h, tok, false)
	require.NoError(t, err)
	require.Empty(t, nb.Replay(t, map[string]any{}).Code, "the bot is connected and answered")
	b.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/workspaces/" + b.ws.ID, Token: b.owner.Token}).RequireStatus(t, http.StatusNoContent)
	require.Equal(t, ws.StatusCode(1008), owner.ExpectClose(t))
	require.Equal(t, ws.StatusCode(1008), member.ExpectClose(t))
	nb.ExpectClosed(t)
}

// TestSocketGuestChannelCreatedLive: a workspace gets its guest channel while a guest's socket
// is open; from that channel's creation on, its events reach the guest live, and other
// channels' events still do not.
func TestSocketGuestChannelCreatedLive(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	owner, guestUser := h.NewUser(t), h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, owner.User.ID)
	persisttest.Member(t, h.Store, ws.ID, guestUser.User.ID, persist.RoleGuest)
	b := &realtimeBundle{h: h, owner: owner, guest: guestUser, ws: ws}
	b.general = persisttest.Channel(t, h.Store, persist.ActorFor(owner.User), ws.ID, "general").ID
	head := b.add(t, persist.EventInput{ChannelID: b.general})
	guest := b.dial(t, guestUser.Token, strconv.FormatInt(head, 10))
	b.add(t, persist.EventInput{ChannelID: b.general}) // not the guest's
	b.guestChannel = persisttest.Channel(t, h.Store, persist.ActorFor(owner.User), ws.ID, persist.GuestChannel).ID
	created := strconv.FormatInt(head+2, 10)
	message := strconv.FormatInt(b.add(t, persist.EventInput{ChannelID: b.guestChannel}), 10)
	b.add(t, persist.EventInput{ChannelID: b.general})
	last := strconv.FormatInt(b.add(t, persist.EventInput{ChannelID: b.guestChannel}), 10)
	require.Equal(t, []string{created, message, last}, readCursors(t, guest, 3))
}

// TestSocketResumesFromTheFeedTail: a socket that resumes from a cursor its workspace's feed
// dispatched recently catches up from memory — exactly once, in order, by the visibility rule.
func TestSocketResumesFromTheFeedTail(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t, servertest.WithConfig(func(c *server.Config) { c.Metrics = true }))
	memory := func() int { return b.h.Metric(t, `natter_realtime_backfilled_total{source="memory"}`) }
	itoa := func(c int64) string { return strconv.FormatInt(c, 10) }
	owner := b.dial(t, b.owner.Token, "2") // starts the feed
	// Until the owner's socket is live it may read events from Postgres before the feed
	// dispatches them; once it is, every event it reads is in the feed's tail.
	var last int64
	require.Eventually(t, func() bool {
		before := memory()
		last = b.add(t, persist.EventInput{ChannelID: b.general})
		require.Equal(t, itoa(last), owner.Next(t).Cursor)
		require.Equal(t, itoa(last), b.dial(t, b.owner.Token, itoa(last-1)).Next(t).Cursor)
		return memory() == before+1
	}, 10*time.Second, 100*time.Millisecond)

	general, dm := b.add(t, persist.EventInput{ChannelID: b.general}), b.add(t, persist.EventInput{DirectConversationID: b.dm})
	guest, general2 := b.add(t, persist.EventInput{ChannelID: b.guestChannel}), b.add(t, persist.EventInput{ChannelID: b.general})
	all := []string{itoa(general), itoa(dm), itoa(guest), itoa(general2)}
	require.Equal(t, all, readCursors(t, owner, 4))
	m := memory()
	require.Equal(t, all, readCursors(t, b.dial(t, b.owner.Token, itoa(last)), 4))
	require.Equal(t, m+4, memory())
	require.Equal(t, []string{itoa(dm), itoa(guest)}, readCursors(t, b.dial(t, b.guest.Token, itoa(last)), 2), "the guest's events only")
	require.Equal(t, []string{itoa(guest), itoa(general2)}, readCursors(t, b.dial(t, b.member.Token, itoa(general)), 2), "not the conversation")
	require.Equal(t, m+8, memory())
}
