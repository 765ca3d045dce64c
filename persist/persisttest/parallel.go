package persisttest

import (
	"flag"
	"strconv"
)

// WaitingTests makes n the default of go test's -parallel for a package whose tests wait far
// more than they compute (on delivery delays, timers, sockets, the database): go test's default,
// one test per core, leaves both cores of CI mostly idle while such tests sleep. Call it from
// TestMain before m.Run; a -parallel given on the command line wins.
func WaitingTests(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
