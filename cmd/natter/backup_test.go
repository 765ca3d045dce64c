package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
)

// TestBackupRestore writes through the real API of the real binary, backs the running server
// up, restores into an empty database and a new data dir (an empty NATS store, an empty upload
// directory), and checks that a server there answers the same reads, replays the same events
// to a socket resuming from a cursor taken before the backup (no gap, no duplicate), and goes
// on with the next cursor.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	bin := natterBinary(t)
	dir := t.TempDir()
	srcDB, srcData := persisttest.URL(t), filepath.Join(dir, "src")
	src := startNatter(t, bin, []string{"serve", "--database-url", srcDB, "--data-dir", srcData, "--dev-bootstrap",
		"--addr", "127.0.0.1:0"})
	api := &crashClient{base: src.base}
	workspace, general := api.target(t)

	var cursors []int64
	for i := 0; i < 6; i++ {
		c, err := api.post(general, fmt.Sprintf("before the backup %d", i))
		require.NoError(t, err)
		cursors = append(cursors, c)
	}
	var msgs struct{ Messages []struct{ ID string } }
	require.NoError(t, api.call(http.MethodGet, "/api/channels/"+general+"/messages", nil, &msgs))
	require.NotEmpty(t, msgs.Messages)
	var reacted struct{ Event struct{ Cursor string } }
	require.NoError(t, api.call(http.MethodPost, "/api/messages/"+msgs.Messages[0].ID+"/reactions",
		map[string]string{"emoji": "👍"}, &reacted))
	uploadID := uploadFile(t, src.base, workspace, "notes.txt", []byte("the bytes of an uploaded file"))
	var attached struct{ Event struct{ Cursor string } }
	require.NoError(t, api.call(http.MethodPost, "/api/messages/"+msgs.Messages[0].ID+"/attachments",
		map[string]string{"upload_id": uploadID}, &attached))
	last, err := strconv.ParseInt(attached.Event.Cursor, 10, 64)
	require.NoError(t, err)

	reads := []string{"/api/workspaces", "/api/workspaces/" + workspace + "/channels",
		"/api/channels/" + general + "/messages", "/api/workspaces/" + workspace + "/members",
		"/api/uploads/" + uploadID, "/api/me"}
	before := map[string]string{}
	for _, path := range reads {
		status, body := get(t, src.base+path)
		require.Equal(t, http.StatusOK, status, "%s: %s", path, body)
		before[path] = body
	}
	resumeFrom := cursors[2]
	srcSock := dialEvents(t, src.base, workspace, strconv.FormatInt(resumeFrom, 10))
	want := readFrames(t, srcSock, last)

	// A relative --output, as an operator types it: the file lands in the working directory.
	backup := filepath.Join(dir, "natter.backup")
	out := runNatterIn(t, dir, bin, 0, "admin", "backup", "--database-url", srcDB, "--data-dir", srcData, "--output", "natter.backup")
	require.Contains(t, out, "backup written to natter.backup")
	require.Contains(t, out, "1 uploads (objects included)")
	// The source goes on after the backup: this event is not in it.
	newer, err := api.post(general, "after the backup")
	require.NoError(t, err)

	// Refusals change nothing: a database that is not empty, a file that is not a backup.
	busy := persisttest.URL(t)
	out = runNatter(t, bin, 1, "admin", "restore", "--database-url", busy, "--data-dir", filepath.Join(dir, "busy"), "--input", backup)
	require.Contains(t, out, "natter: admin restore: the database is not empty")
	require.Contains(t, out, "--replace")
	out = runNatter(t, bin, 1, "admin", "restore", "--database-url", persisttest.EmptyURL(t), "--data-dir",
		filepath.Join(dir, "other"), "--input", filepath.Join(srcData, "natter.lock"))
	require.Contains(t, out, "is not a natter backup")
	out = runNatter(t, bin, 1, "admin", "backup", "--database-url", srcDB, "--data-dir", srcData, "--output", backup)
	require.Contains(t, out, "exists")

	dstDB, dstData := persisttest.EmptyURL(t), filepath.Join(dir, "dst")
	out = runNatter(t, bin, 0, "admin", "restore", "--database-url", dstDB, "--data-dir", dstData, "--input", backup)
	require.Contains(t, out, "1 of 1 upload objects")
	dst := startNatter(t, bin, []string{"serve", "--database-url", dstDB, "--data-dir", dstData, "--dev-bootstrap",
		"--addr", "127.0.0.1:0"})
	for _, path := range reads {
		status, body := get(t, dst.base+path)
		require.Equal(t, http.StatusOK, status, "%s: %s", path, body)
		if json.Valid([]byte(body)) {
			require.JSONEq(t, before[path], body, "%s answers as before the backup", path)
		} else {
			require.Equal(t, before[path], body, "%s answers as before the backup", path)
		}
	}

	// A cursor past the backup's log (taken on the source afterwards) must resync.
	ahead := dialEvents(t, dst.base, workspace, strconv.FormatInt(newer, 10))
	require.Equal(t, 4001, closeCode(t, ahead), "a cursor the restored log never issued is closed for resync")

	resumed := dialEvents(t, dst.base, workspace, strconv.FormatInt(resumeFrom, 10))
	got := readFrames(t, resumed, last)
	require.Equal(t, want, got, "the same events after the cursor, once each, in order")
	api.base = dst.base
	next, err := api.post(general, "after the restore")
	require.NoError(t, err)
	require.Equal(t, last+1, next, "the log goes on from the backup's last cursor")
	frame := readFrames(t, resumed, next)
	require.Len(t, frame, 1)
	require.Equal(t, next, frameCursor(t, frame[0]))

	require.NoError(t, dst.cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, dst.cmd.Wait())
}

// runNatter runs an admin command of the binary, requires its exit status and returns its
// stdout and stderr together.
func runNatter(t *testing.T, bin string, status int, args ...string) string {
	t.Helper()
	return runNatterIn(t, t.TempDir(), bin, status, args...)
}

// runNatterIn is runNatter in the working directory dir.
func runNatterIn(t *testing.T, dir, bin string, status int, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	require.Equal(t, status, code, "natter %v:\n%s", args, out)
	return string(out)
}

// uploadFile posts a file to /api/uploads and returns its id.
func uploadFile(t *testing.T, base, workspace, name string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, err := mw.CreateFormFile("file", name)
	require.NoError(t, err)
	_, _ = w.Write(data)
	require.NoError(t, mw.Close())
	resp, err := http.Post(base+"/api/uploads?workspace_id="+workspace, mw.FormDataContentType(), &body)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", raw)
	var out struct{ Upload struct{ ID string } }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Upload.ID
}

// readFrames reads event frames (each a decoded JSON object) up to the one with cursor last.
func readFrames(t *testing.T, s *eventSocket, last int64) []map[string]any {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var frames []map[string]any
	for len(frames) == 0 || frameCursor(t, frames[len(frames)-1]) < last {
		h, err := ws.ReadHeader(s.r)
		require.NoError(t, err, "after %d frames", len(frames))
		p := make([]byte, h.Length)
		_, err = io.ReadFull(s.r, p)
		require.NoError(t, err)
		switch h.OpCode {
		case ws.OpClose:
			t.Fatalf("the socket closed after %d frames: %q", len(frames), p)
		case ws.OpPing:
			_ = ws.WriteFrame(s.conn, ws.MaskFrame(ws.NewPongFrame(p)))
		case ws.OpText:
			var f map[string]any
			require.NoError(t, json.Unmarshal(p, &f))
			if c, _ := f["cursor"].(string); c != "" {
				frames = append(frames, f)
			}
		}
	}
	return frames
}

func frameCursor(t *testing.T, f map[string]any) int64 {
	t.Helper()
	c, err := strconv.ParseInt(f["cursor"].(string), 10, 64)
	require.NoError(t, err)
	return c
}

// closeCode reads a socket up to its close frame and returns the close code, requiring that no
// event came before it.
func closeCode(t *testing.T, s *eventSocket) int {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		h, err := ws.ReadHeader(s.r)
		require.NoError(t, err)
		p := make([]byte, h.Length)
		_, err = io.ReadFull(s.r, p)
		require.NoError(t, err)
		switch h.OpCode {
		case ws.OpClose:
			require.GreaterOrEqual(t, len(p), 2)
			return int(p[0])<<8 | int(p[1])
		case ws.OpText:
			var f map[string]any
			require.NoError(t, json.Unmarshal(p, &f))
			require.Empty(t, f["cursor"], "an event before the close: %s", p)
		}
	}
}
