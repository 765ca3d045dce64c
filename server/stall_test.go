package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/server"
)

// stallLimit is the harness's StallTimeout: long beside a loaded machine's scheduling delays,
// short for a test to wait out.
const stallLimit = time.Second

// TestStalledCallerIsCut: a caller that stops reading its response, or stops sending the body
// it announced, has its connection closed once nothing moved for the stall limit, so the
// request lets go of its goroutine and its file; one that keeps moving, however slowly, is
// served; and a realtime socket upgraded on a kept-alive connection lives on past the limit.
func TestStalledCallerIsCut(t *testing.T) {
	t.Parallel()
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.StallTimeout = stallLimit; c.Metrics = true }))
	c := newChat(t, h)
	// Larger than every buffer between the handler and a client that reads nothing (the
	// kernel lets a loopback sender queue a few MiB).
	const size = 24 << 20
	r := upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID, filePart{Name: "big.bin", ContentType: "application/octet-stream", Data: make([]byte, size)})
	r.RequireStatus(t, http.StatusCreated)
	get := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: natter\r\nAuthorization: Bearer %s\r\n\r\n", uploadPath(uploadOf(t, r).ID), c.alice.Token)

	t.Run("ResponseNotRead", func(t *testing.T) {
		before := handled(t, h, "/api/uploads/{upload_id}")
		conn := dialSmallBuffer(t, h)
		_, err := io.WriteString(conn, get)
		require.NoError(t, err)
		// The handler ends only when its write gives up; without a limit it waits for ever,
		// holding its goroutine and the open file.
		require.Eventually(t, func() bool { return handled(t, h, "/api/uploads/{upload_id}") > before },
			30*time.Second, 50*time.Millisecond, "the download still waits for a caller who reads nothing")
		// The connection is closed too, but the kernel still sends what it queued (a few MiB)
		// at the small window's pace before the end shows here: not worth waiting for.
	})

	t.Run("SlowReaderServed", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, get)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var got int64
		buf := make([]byte, 2<<20)
		for {
			// A pause under the limit before each of a dozen reads: longer than the limit in
			// all, and each read lets the server write more.
			time.Sleep(stallLimit / 5)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
			n, err := io.ReadFull(resp.Body, buf)
			got += int64(n)
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			require.NoError(t, err)
		}
		require.Equal(t, int64(size), got)
	})

	t.Run("BodyNotSent", func(t *testing.T) {
		before := handled(t, h, "/api/uploads")
		conn := dialSmallBuffer(t, h)
		_, err := fmt.Fprintf(conn, "POST /api/uploads?workspace_id=%s HTTP/1.1\r\nHost: natter\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 1048576\r\n\r\n--b\r\n", c.ws.ID, c.alice.Token)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return handled(t, h, "/api/uploads") > before },
			30*time.Second, 50*time.Millisecond, "the upload still waits for a body that stopped coming")
		_, err = drain(conn)
		require.NoError(t, err, "the connection was closed, not left open")
		require.Empty(t, incoming(t, h), "the abandoned upload's file is gone")
	})

	t.Run("SlowBodyServed", func(t *testing.T) {
		body, ct := multipartBody(t, filePart{Name: "slow.txt", ContentType: "text/plain", Data: []byte(strings.Repeat("slow but steady\n", 64))})
		conn := dialSmallBuffer(t, h)
		_, err := fmt.Fprintf(conn, "POST /api/uploads?workspace_id=%s HTTP/1.1\r\nHost: natter\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: %s\r\nContent-Length: %d\r\n\r\n", c.ws.ID, c.alice.Token, ct, len(body))
		require.NoError(t, err)
		// Twenty pieces, each after a pause under the limit: longer than the limit in all.
		piece := len(body)/20 + 1
		for len(body) > 0 {
			time.Sleep(stallLimit / 10)
			n := min(piece, len(body))
			_, err := conn.Write(body[:n])
			require.NoError(t, err)
			body = body[n:]
		}
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	})

	t.Run("SocketOnAKeptAliveConnection", func(t *testing.T) {
		conn := dialSmallBuffer(t, h)
		// A plain request first, answered in full, leaves the connection to the next one.
		_, err := fmt.Fprintf(conn, "GET /api/me HTTP/1.1\r\nHost: natter\r\nAuthorization: Bearer %s\r\n\r\n", c.alice.Token)
		require.NoError(t, err)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Zero(t, br.Buffered())
		// The upgrade comes later than the limit after the last response: a write deadline
		// left by that response would refuse the handshake's answer.
		time.Sleep(2 * stallLimit)
		sock, status := h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + c.ws.ID, Token: c.alice.Token, Over: conn})
		require.Equal(t, http.StatusSwitchingProtocols, status)
		msg := c.say(t, c.owner, "/api/channels/"+c.general.ID+"/messages", "still there?")
		for {
			e := sock.Next(t)
			if e.Type == "message.created" {
				require.Contains(t, string(e.Payload), msg.ID)
				break
			}
		}
	})
}

// handled is how many requests the server finished on route, from its metrics.
func handled(t *testing.T, h *servertest.Harness, route string) int {
	t.Helper()
	return h.Metric(t, `natter_http_requests_total{route="`+route+`",`)
}

// dialSmallBuffer connects with a small receive buffer, so a caller that reads nothing stops
// the server's writes soon.
func dialSmallBuffer(t *testing.T, h *servertest.Harness) net.Conn {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", strings.TrimPrefix(h.URL, "http://"))
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// drain reads until the server ends the connection and returns how many bytes came; an error
// means it was still open after 30 s.
func drain(conn net.Conn) (int64, error) {
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return n, err
	}
	return n, nil // EOF, or reset by the server
}
