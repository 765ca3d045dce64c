// Package admin is the `natter` command line (urfave/cli/v2): serve, dev, cluster, migrate, bench and the
// operator commands under `admin`. It is the only package that reads flags and NATTER_*
// variables; everything else takes a Config. Run takes its arguments and writers, so tests drive
// the real command tree in-process. It imports server, streams, persist and migrations.
package admin
