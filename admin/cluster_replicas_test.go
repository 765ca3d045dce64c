package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
)

// natterProcessEnv carries, as a JSON array, the command line of a natter process the test
// binary runs as (runAsNatterProcess): a replica the chaos test can SIGKILL.
const natterProcessEnv = "NATTER_TEST_PROCESS_ARGS"

// runAsNatterProcess runs the command line of natterProcessEnv until SIGTERM and exits; false
// when the variable is unset (a normal test run).
func runAsNatterProcess() bool {
	raw := os.Getenv(natterProcessEnv)
	if raw == "" {
		return false
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := admin.Run(ctx, append([]string{"natter"}, args...), os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// replicaProcess is `natter serve` in a child process.
type replicaProcess struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	logs *bytes.Buffer
}

func startReplicaProcess(t *testing.T, args ...string) *replicaProcess {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), natterProcessEnv+"="+string(raw))
	p := &replicaProcess{cmd: cmd, done: make(chan struct{}), logs: &bytes.Buffer{}}
	cmd.Stderr = &lockedWriter{w: p.logs}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "natter listening on "); ok {
			p.url = rest
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return p
		}
	}
	<-p.done
	t.Fatalf("replica exited before listening: %s", p.logs)
	return nil
}

// kill ends the process with SIGKILL, as a crash would.
func (p *replicaProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// replicaPool is the set of replica URLs clients may use now.
type replicaPool struct {
	mu   sync.Mutex
	urls []string
}

func (p *replicaPool) pick(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.urls[i%len(p.urls)]
}

func (p *replicaPool) set(urls ...string) {
	p.mu.Lock()
	p.urls = urls
	p.mu.Unlock()
}
