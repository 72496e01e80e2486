package redisfrontier

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// goRedisLogs routes go-redis's process-wide logger to the Loggers of
// the open Clients (see Client): go-redis has one logger per process, so
// this is the one piece of package state, installed once.
var goRedisLogs struct {
	once    sync.Once
	mu      sync.Mutex // protects clients and closed
	clients []*Client  // open Clients with a Logger, oldest first
	closed  *Client    // the last one closed, for go-redis's lines after it
}

// clientKey is the context key under which retry passes its Client to
// go-redis, whose log lines carry the call's context.
type clientKey struct{}

func routeGoRedisLogs(c *Client) {
	goRedisLogs.once.Do(func() { redis.SetLogger(goRedisLogger{std: log.New(os.Stderr, "redis: ", log.LstdFlags)}) })
	goRedisLogs.mu.Lock()
	goRedisLogs.clients = append(goRedisLogs.clients, c)
	goRedisLogs.mu.Unlock()
}

func unrouteGoRedisLogs(c *Client) {
	goRedisLogs.mu.Lock()
	goRedisLogs.clients = slices.DeleteFunc(goRedisLogs.clients, func(x *Client) bool { return x == c })
	goRedisLogs.closed = c
	goRedisLogs.mu.Unlock()
}

// goRedisLogger is go-redis's logger once a Client with a Logger exists.
type goRedisLogger struct {
	std *log.Logger // when no Client is open: as go-redis writes by default
}

func (l goRedisLogger) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	c, _ := ctx.Value(clientKey{}).(*Client)
	if c == nil {
		goRedisLogs.mu.Lock()
		if n := len(goRedisLogs.clients); n > 0 {
			c = goRedisLogs.clients[n-1]
		} else {
			c = goRedisLogs.closed
		}
		goRedisLogs.mu.Unlock()
	}
	if c == nil {
		l.std.Print(msg)
		return
	}
	// During an outage the Client has reported (once, at WARN), go-redis's
	// lines about it (a failed dial per attempt) add nothing at the
	// default level.
	level := slog.LevelInfo
	if c.Down() {
		level = slog.LevelDebug
	}
	c.log.Log(ctx, level, "go-redis: "+msg, "prefix", c.prefix)
}

// dialRecorder is a go-redis hook that keeps the last dial failure of a
// Client: go-redis dials from its own goroutines, and a call waiting for
// the connection may see only its own timeout, not why the dial failed.
type dialRecorder struct{ c *Client }

func (h dialRecorder) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.c.lastDial.Store(&err)
		}
		return conn, err
	}
}

func (dialRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
