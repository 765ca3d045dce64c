package benchdata

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist/persisttest"
)

// BenchmarkListReads times the listings of a large team through the real router, over
// loopback HTTP: the channel list (1,000 channels), the DM list and the member directory (20,000
// members; all, a name, a role), for the reader of nothing and the reader of everything of a
// workspace seeded as `natter bench --mode data` seeds it (10,000 messages). Beside ns/op it
// reports cpu-ms/op, this process's CPU time per request (the server's and the client's; not
// Postgres's): what a request costs a loaded machine besides its statements.
//
//	go test ./admin/benchdata -run '^$' -bench ListReads -benchtime 200x -count 6
func BenchmarkListReads(b *testing.B) {
	ctx := context.Background()
	h := servertest.New(b)
	p, err := seedPeople(ctx, h.Store, 20000, "b")
	if err != nil {
		b.Fatal(err)
	}
	w, err := seedWorkspace(ctx, h.Store, p, "b-large", 1000, 1)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, persisttest.StoreURL(b, h.Store))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := w.seedHistory(ctx, conn, p, 10000, 1); err != nil {
		b.Fatal(err)
	}
	if err := w.readEverything(ctx, h.Store, p); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	readers := []struct{ name, token string }{
		{"nothing", persisttest.Session(b, h.Store, p.nothing().ID)},
		{"everything", persisttest.Session(b, h.Store, p.everything().ID)},
	}
	client := &http.Client{}
	defer client.CloseIdleConnections()
	for _, rd := range clientReads("", "") {
		switch rd.name {
		case "channel list", "DM list", "members", "members q", "members role":
		default:
			continue
		}
		for _, reader := range readers {
			url := h.URL + rd.path(w, "")
			b.Run(rd.name+"/"+reader.name, func(b *testing.B) {
				for range warmUps {
					if err := get(ctx, client, url, reader.token); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				start := processCPU()
				for b.Loop() {
					if err := get(ctx, client, url, reader.token); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(processCPU()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
