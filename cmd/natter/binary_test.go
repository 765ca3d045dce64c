package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// natterBinary builds the binary once for the tests of this package that run it.
func natterBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the natter binary")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "natter-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "natter")
		cmd := exec.Command("go", "build", "-o", built.path, ".")
		cmd.Stderr = os.Stderr
		built.err = cmd.Run()
	})
	require.NoError(t, built.err)
	return built.path
}

var built struct {
	once sync.Once
	path string
	err  error
}

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		_ = os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// logWatch collects a running binary's stderr lines and lets a test wait for one.
type logWatch struct {
	mu    sync.Mutex
	lines []string
	added chan struct{} // closed and replaced on every line
}

func watchLogs(t *testing.T, cmd *exec.Cmd) *logWatch {
	t.Helper()
	r, err := cmd.StderrPipe()
	require.NoError(t, err)
	w := &logWatch{added: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			close(w.added)
			w.added = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("natter logs:\n%s", strings.Join(w.all(), "\n"))
		}
	})
	return w
}

func (w *logWatch) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// waitFor blocks until a line containing every part is logged (searching from line from), and
// returns its index.
func (w *logWatch) waitFor(t *testing.T, from int, parts ...string) int {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		w.mu.Lock()
		for i := from; i < len(w.lines); i++ {
			if containsAll(w.lines[i], parts) {
				w.mu.Unlock()
				return i
			}
		}
		added := w.added
		w.mu.Unlock()
		select {
		case <-added:
		case <-deadline:
			t.Fatalf("no log line with %q", parts)
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
