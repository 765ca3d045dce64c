package slackimport_test

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/natterchat/natter/admin/slackimport"
	"github.com/natterchat/natter/persist/persisttest"
)

// writeLargeExport writes a Slack export of about size bytes to path without holding it: 200
// people, 20 channels, day files of 500 messages (a thread reply in ten, a reaction in five).
// Entries are stored uncompressed, so the archive's size is the JSON's.
func writeLargeExport(tb testing.TB, path string, size int64) (messages int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	entry := func(name string, v any) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.NewEncoder(w).Encode(v); err != nil {
			tb.Fatal(err)
		}
	}
	var users, channels []any
	for i := range 200 {
		users = append(users, slackUser(fmt.Sprintf("U%04d", i), fmt.Sprintf("person%d", i), fmt.Sprintf("p%d@bench.example", i), nil))
	}
	for i := range 20 {
		channels = append(channels, obj{"id": fmt.Sprintf("C%03d", i), "name": fmt.Sprintf("channel-%d", i), "created": t0 - 86400,
			"members": list{"U0000", "U0001"}})
	}
	entry("users.json", users)
	entry("channels.json", channels)
	words := strings.Fields("the plan ships friday after review and the tests pass on every branch we keep")
	rng := rand.New(rand.NewPCG(1, 2))
	var written int64
	for day := 0; written < size; day++ {
		date := time.Unix(t0, 0).UTC().AddDate(0, 0, day/20)
		var msgs []any
		var root string
		for i := range 500 {
			at := ts(day/20*86400+i*60, fmt.Sprintf("%06d", day%20))
			text := make([]string, 40)
			for j := range text {
				text[j] = words[rng.IntN(len(words))]
			}
			m := msg(at, fmt.Sprintf("U%04d", rng.IntN(200)), strings.Join(text, " "), nil)
			if i%10 == 0 {
				root = at
			} else if i%10 == 5 {
				m["thread_ts"] = root
			}
			if i%5 == 0 {
				m["reactions"] = list{obj{"name": "+1", "users": list{"U0001", "U0002"}}}
			}
			msgs = append(msgs, m)
		}
		b, _ := json.Marshal(msgs)
		written += int64(len(b))
		messages += len(msgs)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("channel-%d/%s.json", day%20, date.Format(time.DateOnly)), Method: zip.Store})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return messages
}

// peakHeap samples the heap in use every 20 ms until stop is called, which returns the peak.
func peakHeap() (stop func() uint64) {
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// BenchmarkImportArchive imports generated exports of 5 MB and 50 MB (the size) into a
// fresh workspace each, reporting the peak heap in use: bounded memory means the two peaks
// are about the same, whatever the archive's size. Heavy: run once, alone, with -benchtime=1x.
func BenchmarkImportArchive(b *testing.B) {
	for _, mb := range []int64{5, 50} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "export.zip")
			messages := writeLargeExport(b, path, mb<<20)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			store := persisttest.NewStore(b)
			owner := persisttest.User(b, store, nil)
			runtime.GC()
			b.ResetTimer()
			var peak uint64
			for range b.N {
				w := persisttest.Workspace(b, store, owner.ID)
				stop := peakHeap()
				rep, err := slackimport.ImportFile(context.Background(), path, slackimport.Options{Store: store, WorkspaceID: w.ID})
				peak = max(peak, stop())
				if err != nil {
					b.Fatal(err)
				}
				if rep.Counts[slackimport.CountMessages] != messages {
					b.Fatalf("imported %d messages of %d: %s", rep.Counts[slackimport.CountMessages], messages, rep.Summary())
				}
			}
			b.ReportMetric(float64(st.Size())/(1<<20), "archive-MB")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(messages*b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
