package streams_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/natterchat/natter/persist/persisttest"
)

func TestMain(m *testing.M) {
	// Measured alone on the loaded 2-core VM: 59 s at go test's default of 2, 27 s at 8, 4 s of
	// the binary's CPU either way.
	persisttest.WaitingTests(8)
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
