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

// runStatus prints the progress of a crawl: a local one through its
// status server (--addr, the crawl's --http-addr), or the distributed crawl
// stored under a key prefix in Redis (the shared counters, the queue and
// the seen-set's parameters). It only reads.
func runStatus(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "status", "--addr HOST:PORT | --redis URL [--redis-prefix P] [--redis-cluster] [--json]")
	addr := fs.String("addr", "", "status server of a running crawl, as given to crawl --http-addr (host:port or http://host:port)")
	redisURL := fs.String("redis", "", "Redis URL of the crawl: redis://[user:password@]host:port[/db] or rediss:// (TLS)")
	prefix := fs.String("redis-prefix", redisfrontier.DefaultPrefix, "key prefix of the crawl, as given to crawl --redis-prefix")
	cluster := fs.Bool("redis-cluster", false, "Redis Cluster: further seed nodes as addr= query parameters of --redis")
	asJSON := fs.Bool("json", false, "print the status as one JSON object")
	timeout := fs.Duration("timeout", 10*time.Second, "give up when the crawl's status server or Redis does not answer within this time")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *addr != "" && *redisURL != "":
		return fmt.Errorf("%w: give --addr (a local crawl) or --redis (a distributed one), not both", errUsage)
	case *addr == "" && *redisURL == "":
		return fmt.Errorf("%w: --addr or --redis is required", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *addr != "" {
		return localStatus(ctx, e.stdout, *addr, *asJSON)
	}
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
	workers, err := redisfrontier.ReadWorkers(ctx, c)
	if err != nil {
		return err
	}
	exact, isExact, err := redisfrontier.ReadExactStats(ctx, c)
	if err != nil {
		return err
	}
	var exactp *redisfrontier.ExactStats
	if isExact {
		exactp = &exact
	}
	if *asJSON {
		return printJSON(e.stdout, redisStatusJSON{Prefix: *prefix, State: redisState(params, st), SeenSet: params, Stats: st, Exact: exactp, Workers: workers})
	}
	printStatus(e.stdout, *prefix, params, st, exactp)
	printWorkers(e.stdout, workers, time.Now())
	return nil
}

// printWorkers lists the workers that beat: state, last beat, pages and
// entries in flight as they last reported them.
func printWorkers(w io.Writer, ws []redisfrontier.WorkerInfo, now time.Time) {
	for _, x := range ws {
		state := "alive"
		if !x.Alive {
			state = "gone"
		}
		fmt.Fprintf(w, "worker %s %s: %s, last beat %v ago, %d pages, %d in flight\n",
			x.ID, x.Name, state, now.Sub(x.At).Round(100*time.Millisecond), x.Pages, x.InFlight)
	}
}

// redisStatusJSON is the output of status --redis --json.
type redisStatusJSON struct {
	Prefix  string              `json:"prefix"`
	State   string              `json:"state"`
	SeenSet string              `json:"seen_set"`
	Stats   redisfrontier.Stats `json:"stats"`
	// Exact holds the exact duplicate check's counters; absent for a
	// filter-only crawl.
	Exact *redisfrontier.ExactStats `json:"exact,omitempty"`
	// Workers are the workers that beat, live ones first.
	Workers []redisfrontier.WorkerInfo `json:"workers"`
}

// redisState is "not started" when the prefix holds no crawl, "finished"
// when nothing is queued, out or scheduled, a continuous crawl's waiting
// state when only its schedule holds URLs, else "running".
func redisState(params string, st redisfrontier.Stats) string {
	switch {
	case params == "" && st.Served == 0 && st.Queued == 0:
		return "not started"
	case st.Queued == 0 && st.Leased == 0 && st.Retrying == 0 && st.Scheduled > 0:
		return "continuous, waiting for the next URL due"
	case st.Queued == 0 && st.Leased == 0 && st.Retrying == 0:
		return "finished"
	}
	return "running"
}

// printStatus writes the status report; state is "not started" when the
// prefix holds no crawl, "finished" when nothing is queued or out. exact
// is nil for a filter-only crawl.
func printStatus(w io.Writer, prefix, params string, st redisfrontier.Stats, exact *redisfrontier.ExactStats) {
	fmt.Fprintf(w, "crawl %q: %s\n", prefix, redisState(params, st))
	fmt.Fprintf(w, "pages fetched %d, errors %d, completed %d, handed out %d\n", st.Pages, st.Errors, st.Done, st.Served)
	fmt.Fprintf(w, "queued %d on %d waiting hosts, %d hosts in flight, %d URLs waiting for a retry (%d retries in all)\n",
		st.Queued, st.Hosts, st.Leased, st.Retrying, st.Retried)
	if len(st.Holders) > 0 {
		// A dead worker shows here until the others' heartbeats (or,
		// without heartbeats, its leases' expiry) give its hosts back.
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
	if st.Scheduled > 0 || st.Promoted > 0 {
		fmt.Fprintf(w, "continuous: %d URLs scheduled, %d queued again when due\n", st.Scheduled, st.Promoted)
	}
	switch {
	case exact != nil:
		fmt.Fprintf(w, "duplicate check: exact, 0 pages lost to the filter: %d false positives caught and queued, of %d \"maybe seen\" answers checked\n", exact.Caught, exact.Checks)
	case params != "":
		fmt.Fprintf(w, "duplicate check: filter-only (the filter's false positives are lost; a worker's summary estimates how many)\n")
	}
	fmt.Fprintf(w, "dead-worker recovery: %d leases ended by heartbeats, %d entries re-queued, %d completions finished\n", st.Reaped, st.Requeued, st.Reclaimed)
	if params == "" {
		params = "none"
	}
	fmt.Fprintf(w, "seen-set: %s\n", params)
}
