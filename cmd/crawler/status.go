package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
)

// runStatus prints the progress of the distributed crawl stored under a
// key prefix in Redis: the shared counters, the queue and the seen-set's
// parameters. It only reads.
func runStatus(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "status", "--redis URL [--redis-prefix P] [--redis-cluster]")
	redisURL := fs.String("redis", "", "Redis URL of the crawl: redis://[user:password@]host:port[/db] or rediss:// (TLS); required")
	prefix := fs.String("redis-prefix", redisfrontier.DefaultPrefix, "key prefix of the crawl, as given to crawl --redis-prefix")
	cluster := fs.Bool("redis-cluster", false, "Redis Cluster: further seed nodes as addr= query parameters of --redis")
	timeout := fs.Duration("timeout", 10*time.Second, "give up when Redis does not answer within this time")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *redisURL == "" {
		return fmt.Errorf("%w: --redis is required", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := redisfrontier.Dial(ctx, redisfrontier.Config{URL: *redisURL, Prefix: *prefix, Cluster: *cluster})
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := redisfrontier.ReadStats(ctx, c)
	if err != nil {
		return err
	}
	params, err := redisfrontier.ReadSeenParams(ctx, c)
	if err != nil {
		return err
	}
	printStatus(e.stdout, *prefix, params, st)
	return nil
}

// printStatus writes the status report; state is "not started" when the
// prefix holds no crawl, "finished" when nothing is queued or out.
func printStatus(w io.Writer, prefix, params string, st redisfrontier.Stats) {
	state := "running"
	switch {
	case params == "" && st.Served == 0 && st.Queued == 0:
		state = "not started"
	case st.Queued == 0 && st.Leased == 0:
		state = "finished"
	}
	fmt.Fprintf(w, "crawl %q: %s\n", prefix, state)
	fmt.Fprintf(w, "pages fetched %d, errors %d, completed %d, handed out %d\n", st.Pages, st.Errors, st.Done, st.Served)
	fmt.Fprintf(w, "queued %d on %d waiting hosts, %d hosts in flight\n", st.Queued, st.Hosts, st.Leased)
	if len(st.Holders) > 0 {
		// A dead worker shows here until its leases expire.
		ids := slices.Sorted(maps.Keys(st.Holders))
		var b strings.Builder
		for i, id := range ids {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %d", id, st.Holders[id])
		}
		fmt.Fprintf(w, "hosts in flight by worker lease id: %s\n", b.String())
	}
	fmt.Fprintf(w, "discovered new %d, duplicates %d\n", st.New, st.Dup)
	fmt.Fprintf(w, "dead-worker recovery: %d entries re-queued, %d completions finished\n", st.Requeued, st.Reclaimed)
	if params == "" {
		params = "none"
	}
	fmt.Fprintf(w, "seen-set: %s\n", params)
}
