package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// BenchmarkMessagePostHTTP is the load figure of docs/performance.md: 16 people, each with their
// own session and keep-alive connection, post into one channel at once through the real router
// over loopback HTTP. It reports messages per second and the p50 and p99 request latency.
// go test ./server -run '^$' -bench BenchmarkMessagePostHTTP -benchtime 8000x
func BenchmarkMessagePostHTTP(b *testing.B) {
	const posters = 16
	h := servertest.New(b)
	owner := h.NewUser(b)
	ws := persisttest.Workspace(b, h.Store, owner.User.ID)
	ch := persisttest.Channel(b, h.Store, persist.ActorFor(owner.User), ws.ID, "general")
	tokens := make([]string, posters)
	for i := range tokens {
		a := h.NewUser(b)
		persisttest.Member(b, h.Store, ws.ID, a.User.ID, persist.RoleMember)
		tokens[i] = a.Token
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: posters}}
	defer client.CloseIdleConnections()
	url := h.URL + "/api/channels/" + ch.ID + "/messages"
	body := []byte(`{"body":"a message of an ordinary length, with a few words to index for search"}`)
	post := func(token string) error {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	for _, tok := range tokens { // warm the connections
		if err := post(tok); err != nil {
			b.Fatal(err)
		}
	}

	var mu sync.Mutex
	latencies := make([]time.Duration, 0, b.N)
	var issued atomic.Int64
	var g errgroup.Group
	b.ResetTimer()
	start := time.Now()
	for _, tok := range tokens {
		g.Go(func() error {
			mine := make([]time.Duration, 0, b.N/posters+1)
			for issued.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := post(tok); err != nil {
					return err
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	quantile := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(quantile(0.50), "p50-ms")
	b.ReportMetric(quantile(0.99), "p99-ms")
}
