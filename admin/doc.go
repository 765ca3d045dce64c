// Package admin is the `natter` command line (urfave/cli/v2): serve, dev, cluster, migrate, bench
// (its own package, admin/bench) and the operator commands under `admin`. It and admin/bench are
// the only packages that read flags and NATTER_* variables; everything else takes a Config. Run takes its arguments and writers, so tests drive
// the real command tree in-process. It imports server, realtime, streams and persist.
package admin
