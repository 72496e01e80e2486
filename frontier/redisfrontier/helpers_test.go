package redisfrontier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testAddr is the Redis the tests use (CI starts one there).
const testAddr = "127.0.0.1:6379"

// testRedis returns a go-redis client for the test Redis, skipping the
// test when none answers (failing it when CI=true).
func testRedis(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testAddr, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis at %s: %v (CI=true: Redis is required)", testAddr, err)
		}
		t.Skipf("no redis at %s (%v); start one or set CI=true to fail instead", testAddr, err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// testPrefix returns a fresh key prefix and deletes its keys when the test
// ends.
func testPrefix(t testing.TB, rdb *redis.Client) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	prefix := "lctest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() { deletePrefix(t, rdb, prefix) })
	return prefix
}

func deletePrefix(t testing.TB, rdb *redis.Client, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("scan %s*: %v", prefix, err)
		return
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := rdb.Del(ctx, keys[:n]...).Err(); err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		keys = keys[n:]
	}
}

// testClient returns a Client over the test Redis with a fresh prefix.
func testClient(t testing.TB) *Client {
	t.Helper()
	rdb := testRedis(t)
	c, err := NewClient(rdb, Config{Prefix: testPrefix(t, rdb), MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// helperEnv names the role a re-executed test binary plays; see TestMain.
const helperEnv = "LCREDIS_HELPER"

// helpers are the roles a re-executed test binary can play: each reads its
// parameters from the environment, works, and exits.
var helpers = map[string]func() int{}

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		fn, ok := helpers[role]
		if !ok {
			os.Stderr.WriteString("unknown helper role " + role + "\n")
			os.Exit(2)
		}
		os.Exit(fn())
	}
	os.Exit(m.Run())
}

// privateRedis is a redis-server of a test's own, in a temporary
// directory, without persistence unless its arguments turn it on. Its log
// is printed when the test fails.
type privateRedis struct {
	t    testing.TB
	port int
	dir  string
	args []string // after the common ones
	cmd  *exec.Cmd
}

// startPrivateRedis starts a private redis-server on port (0: a free one)
// with the extra arguments and stops it when the test ends. It skips the
// test when redis-server is not installed (fails it when CI=true).
func startPrivateRedis(t testing.TB, port int, args ...string) *privateRedis {
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
	r := &privateRedis{t: t, port: port, dir: t.TempDir(), args: args}
	r.start()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			log, _ := os.ReadFile(r.logFile())
			t.Logf("redis-server %s:\n%s", r.addr(), log)
		}
	})
	return r
}

func (r *privateRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *privateRedis) logFile() string { return filepath.Join(r.dir, "redis.log") }

// start starts the server (again, after stop: same port, directory and
// arguments) and waits until it answers.
func (r *privateRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", append([]string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--dir", r.dir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", r.logFile()}, r.args...)...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(r.logFile())
			r.t.Fatalf("private redis-server on %s did not answer in 10s:\n%s", r.addr(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop shuts the server down (SIGTERM: it flushes an AOF) and waits.
func (r *privateRedis) stop() {
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

// kill kills the server (SIGKILL: no shutdown, the AOF is as the last
// write left it) and waits.
func (r *privateRedis) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}
