// Package redistest starts private redis-server processes for tests:
// each in its own temporary directory, on a port of its own, stopped when
// the test ends, with its log printed when the test fails. It skips a test
// when redis-server is not installed, and fails it when CI=true.
package redistest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server of a test's own, in a temporary directory,
// without persistence unless its arguments turn it on.
type Server struct {
	t    testing.TB
	port int
	dir  string
	args []string // after the common ones
	cmd  *exec.Cmd
}

// Start starts a private redis-server on port (0: a free one)
// with the extra arguments and stops it when the test ends. It skips the
// test when redis-server is not installed (fails it when CI=true).
func Start(t testing.TB, port int, args ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not installed (CI=true: required)")
		}
		t.Skip("redis-server not installed")
	}
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	r := &Server{t: t, port: port, dir: t.TempDir(), args: args}
	r.Start()
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			log, _ := os.ReadFile(r.logFile())
			t.Logf("redis-server %s:\n%s", r.Addr(), log)
		}
	})
	return r
}

func (r *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *Server) logFile() string { return filepath.Join(r.dir, "redis.log") }

// Start starts the server (again, after stop: same port, directory and
// arguments) and waits until it answers.
func (r *Server) Start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", append([]string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--dir", r.dir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", r.logFile()}, r.args...)...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(r.logFile())
			r.t.Fatalf("private redis-server on %s did not answer in 10s:\n%s", r.Addr(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down (SIGTERM: it flushes an AOF) and waits.
func (r *Server) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
		<-done
	}
	r.cmd = nil
}

// Kill kills the server (SIGKILL: no shutdown, the AOF is as the last
// write left it) and waits.
func (r *Server) Kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}
