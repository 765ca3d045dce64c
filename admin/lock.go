package admin

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFileName is the file in the data dir a server holds locked while it runs.
const lockFileName = "natter.lock"

// lockDataDir takes the data dir for this server: two servers on one data dir would open two
// JetStream stores and two postmasters on the same files. The lock is an flock, so it ends with
// the process however it ends; the file keeps the holder's pid for the refusal's sentence.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock --data-dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		pid := strings.TrimSpace(string(holder))
		if _, perr := strconv.Atoi(pid); perr != nil {
			pid = "unknown"
		}
		return nil, fmt.Errorf("another natter server (pid %s) is running on --data-dir %s; stop it, or give this one "+
			"its own --data-dir (the lock is %s)", pid, dir, path)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
