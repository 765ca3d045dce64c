package streamstest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// SmallDisk mounts a tmpfs of size bytes for the test and returns its directory, so that a
// store under it can run out of space. Mounting needs root (CAP_SYS_ADMIN); without it the test
// is skipped, saying so.
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "natter-test", dir).CombinedOutput()
	if err != nil {
		t.Skipf("mounting a small tmpfs needs root (CAP_SYS_ADMIN), which this run lacks: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// FillDisk writes a file taking every free byte of dir's filesystem and returns its path;
// removing it gives the space back.
func FillDisk(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	defer f.Close()
	for _, size := range []int{64 << 10, 512, 1} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill %s: %v", dir, err)
				}
				break
			}
		}
	}
	return path
}
