package server_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgx pools and the NATS client close their background goroutines asynchronously.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// An HTTP client's kept-alive connection ends its write loop after its read loop (the one
		// above), so a check in between sees it still there.
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
