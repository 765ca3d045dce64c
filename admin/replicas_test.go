package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams/streamstest"
)

// TestReplicasShareOneCluster runs two `natter serve` replicas on one database and one external
// NATS server, as operators deploy them: a message posted to either replica reaches a socket
// open on the other, once, with the same cursor.
func TestReplicasShareOneCluster(t *testing.T) {
	t.Parallel()
	emb, _ := streamstest.Embedded(t)
	dbURL := persisttest.URL(t)
	replica := func() string {
		return startServer(t, "serve", "--database-url", dbURL, "--nats-url", emb.TrustedURL(),
			"--dev-bootstrap", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--access-log=false")
	}
	a, b := replica(), replica()

	var workspaces struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
	}
	getJSON(t, a+"/api/workspaces", &workspaces)
	ws0 := workspaces.Workspaces[0].ID
	var channels struct {
		Channels []struct{ ID, Name string } `json:"channels"`
	}
	getJSON(t, b+"/api/workspaces/"+ws0+"/channels", &channels)
	general := channels.Channels[0].ID

	onA, onB := dialWorkspace(t, a, ws0), dialWorkspace(t, b, ws0)
	postMessage(t, b, general, "posted on B")
	postMessage(t, a, general, "posted on A")
	for _, sock := range []*wsReader{onA, onB} {
		first, second := sock.nextOfType(t, "message.created"), sock.nextOfType(t, "message.created")
		require.Contains(t, string(first.Payload), "posted on B")
		require.Contains(t, string(second.Payload), "posted on A")
		require.NotEqual(t, first.Cursor, second.Cursor)
	}
}

type wsReader struct {
	conn io.ReadWriter
}

type wsEvent struct {
	Cursor  string          `json:"cursor"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

func dialWorkspace(t *testing.T, base, workspaceID string) *wsReader {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, br, _, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/realtime/ws?workspace_id="+workspaceID)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	var r io.Reader = conn
	if br != nil {
		// The server may have sent backfill along with the handshake.
		r = io.MultiReader(br, conn)
	}
	return &wsReader{conn: struct {
		io.Reader
		io.Writer
	}{r, conn}}
}

// nextOfType reads events until one of type typ arrives.
func (r *wsReader) nextOfType(t *testing.T, typ string) wsEvent {
	t.Helper()
	for {
		msg, err := wsutil.ReadServerText(r.conn)
		require.NoError(t, err)
		var e wsEvent
		require.NoError(t, json.Unmarshal(msg, &e))
		if e.Type == typ {
			return e
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

func postMessage(t *testing.T, base, channelID, body string) {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"body": body})
	resp, err := http.Post(base+"/api/channels/"+channelID+"/messages", "application/json", bytes.NewReader(raw))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}
