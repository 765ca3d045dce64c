// Command natter is the Natter server and its operator tools; see `natter --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/natterchat/natter/admin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := admin.Run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		admin.PrintError(os.Stderr, os.Args, os.Getenv, err)
	}
	os.Exit(admin.ExitStatus(err))
}
