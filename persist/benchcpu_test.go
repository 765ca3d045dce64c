package persist_test

import (
	"syscall"
	"testing"
	"time"
)

// reportProcessCPU adds this process's CPU time per operation (user and system) to a
// benchmark's result, as cpu-ms/op; call the function it returns when the loop is done. On a
// shared machine wall time per operation moves with the other jobs' load, CPU time much less.
// Postgres's share is not in it: the test cluster is another process, shared by every test
// binary.
func reportProcessCPU(b *testing.B) (done func()) {
	start := processCPU()
	return func() {
		b.ReportMetric(float64(processCPU()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
