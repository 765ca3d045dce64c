package server_test

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
)

// TestDatabaseOutage: while the database cannot be reached, requests answer 503 unavailable
// with Retry-After (not 500 internal), and the API recovers once it is back.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	route, outage := persisttest.WithOutage(t)
	h := servertest.New(t, servertest.WithStoreOptions(route))
	owner := h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, owner.User.ID)
	general := persisttest.Channel(t, h.Store, persist.ActorFor(owner.User), ws.ID, "general")
	h.Get(t, "/api/me", owner.Token).RequireStatus(t, http.StatusOK)

	outage.Cut()
	for _, r := range []*servertest.Response{
		h.Get(t, "/api/me", owner.Token),
		h.Get(t, "/api/workspaces/"+ws.ID, owner.Token),
		h.Post(t, "/api/channels/"+general.ID+"/messages", owner.Token, map[string]any{"body": "hello"}),
	} {
		r.RequireError(t, http.StatusServiceUnavailable, persist.CodeUnavailable)
		after, err := strconv.Atoi(r.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After is a number of seconds")
		require.Positive(t, after)
		require.NotContains(t, string(r.Body), "dial")
	}
	h.Get(t, "/readyz", "").RequireStatus(t, http.StatusServiceUnavailable)

	outage.Restore()
	h.Get(t, "/api/me", owner.Token).RequireStatus(t, http.StatusOK)
	h.Post(t, "/api/channels/"+general.ID+"/messages", owner.Token, map[string]any{"body": "hello"}).
		RequireStatus(t, http.StatusCreated)
}

// TestDatabaseOutageLogged: the refusals of an outage are a warning, not an error, and a burst
// of them is one line (with how many were refused), not one line each; every refusal still
// answers 503 with Retry-After.
func TestDatabaseOutageLogged(t *testing.T) {
	t.Parallel()
	route, outage := persisttest.WithOutage(t)
	logs := &lockedBuffer{}
	h := servertest.New(t, servertest.WithStoreOptions(route), servertest.WithConfig(func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}))
	owner := h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, owner.User.ID)
	general := persisttest.Channel(t, h.Store, persist.ActorFor(owner.User), ws.ID, "general")

	outage.Cut()
	for range 20 {
		r := h.Post(t, "/api/channels/"+general.ID+"/messages", owner.Token, map[string]any{"body": "hello"})
		r.RequireError(t, http.StatusServiceUnavailable, persist.CodeUnavailable)
		after, err := strconv.Atoi(r.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After is a number of seconds")
		require.Positive(t, after)
	}
	outage.Restore()

	var outageLines []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		require.NotContains(t, l, "level=ERROR", "an outage is not logged as an error")
		if strings.Contains(l, "database is unavailable") {
			outageLines = append(outageLines, l)
		}
	}
	require.Len(t, outageLines, 1, "20 refusals in a burst are one line")
	require.Contains(t, outageLines[0], "level=WARN")
	require.Contains(t, outageLines[0], "refused=1")
}
