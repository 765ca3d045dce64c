package server_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/natterchat/natter/persist/persisttest"
)

func TestMain(m *testing.M) {
	// Four, not eight: these tests compute more (every route, matrices). A quarter of them, alone
	// on the loaded 2-core VM: 132 and 127 s at go test's default of 2, 122 and 105 s at 4.
	persisttest.WaitingTests(4)
	goleak.VerifyTestMain(m,
		// pgx pools and the NATS client close their background goroutines asynchronously.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// An HTTP client's kept-alive connection ends its write loop after its read loop (the one
		// above), so a check in between sees it still there.
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
