package redisfrontier

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/internal/redistest"
	"github.com/layercrawl/layercrawl/mlbf"
)

// clusterPorts are the ports of the private test Cluster's three masters
// (their cluster bus ports are these plus 10000).
var clusterPorts = []int{17101, 17102, 17103}

// startCluster starts three redis-server processes in Cluster mode on
// clusterPorts, each in its own temporary directory and without
// persistence, joins them into one Cluster with `redis-cli --cluster
// create` (no replicas: each master serves a third of the slots) and
// returns the URL of the crawl's Config, which names every node. The nodes
// are stopped when the test ends. Without redis-server or redis-cli the
// test is skipped, or fails when CI=true.
func startCluster(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not installed (CI=true: the Redis Cluster test must run; the redis-server package brings both)", bin)
			}
			t.Skipf("%s not installed: Redis Cluster test skipped (set CI=true to fail instead)", bin)
		}
	}
	var addrs []string
	for _, port := range clusterPorts {
		for _, p := range []int{port, port + 10000} {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				t.Fatalf("port %d for the test Cluster is taken: %v", p, err)
			}
			l.Close()
		}
		addrs = append(addrs, redistest.Start(t, port, "--cluster-enabled", "yes", "--cluster-node-timeout", "5000").Addr())
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// Every node must see the whole Cluster before the test starts.
	for _, addr := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		deadline := time.Now().Add(20 * time.Second)
		for {
			info, err := rdb.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s not ready in 20s: %v\n%s", addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		rdb.Close()
	}
	return "redis://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
}

// TestCluster runs the seen-set and the frontier on a real three-master
// Redis Cluster: every script touches one slot (its hash tag), the 16
// default shards of the seen-set spread over all masters, the answers agree
// with in-memory filters, concurrent checks from goroutines and processes
// report each new URL exactly once (also while a growing seen-set's 16
// shards add generations), and a small crawl by two workers
// fetches every page once.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private three-node Redis Cluster: skipped in -short")
	}
	url := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dial := func(t *testing.T, prefix string) *Client {
		c, err := Dial(ctx, Config{URL: url, Prefix: prefix, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, ok := c.Redis().(*redis.ClusterClient); !ok {
			t.Fatalf("Dial(%q) made a %T, want a Cluster client", url, c.Redis())
		}
		return c
	}

	t.Run("seen agrees with filter", func(t *testing.T) {
		c := dial(t, "agree:")
		s, err := OpenSeen(ctx, c, SeenOptions{Filter: smallFilter, MaxBatch: 300})
		if err != nil {
			t.Fatal(err)
		}
		if s.Shards() != 16 {
			t.Fatalf("default shards on a Cluster = %d, want 16", s.Shards())
		}
		// The fixed prefix makes the slots, and so this check, deterministic.
		nodes := map[string]bool{}
		for sh := range s.keys {
			addr, err := masterOf(ctx, c.Redis().(*redis.ClusterClient), s.keys[sh][0])
			if err != nil {
				t.Fatal(err)
			}
			nodes[addr] = true
		}
		if len(nodes) != len(clusterPorts) {
			t.Errorf("the 16 shards sit on %d masters, want all %d", len(nodes), len(clusterPorts))
		}
		sized := SeenSizing(smallFilter)
		whole, _ := mlbf.NewLayout(sized)
		filters := make([]*mlbf.Filter, s.Shards())
		for i := range filters {
			if filters[i], err = mlbf.New(ShardOptions(sized, whole, s.Shards())); err != nil {
				t.Fatal(err)
			}
		}
		r := seedRand(t)
		present := 0
		var keys [][]string
		for round := 0; round < 6; round++ {
			batch := make([][]string, 500)
			for i := range batch {
				if len(keys) > 0 && r.IntN(4) == 0 {
					batch[i] = keys[r.IntN(len(keys))] // seen before
				} else {
					batch[i] = randomKey(r)
				}
			}
			keys = append(keys, batch...)
			got := make([]bool, len(batch))
			if err := s.TestAndAddBatch(ctx, batch, got); err != nil {
				t.Fatal(err)
			}
			for i, k := range batch {
				_, route := s.Layout().Probes(k, nil)
				if want := filters[Shard(route, s.Shards())].TestAndAdd(k); got[i] != want {
					t.Fatalf("round %d key %q: cluster TestAndAdd = %v, in-memory filter = %v", round, k, got[i], want)
				}
				if got[i] {
					present++
				}
			}
		}
		if present == 0 || present == 3000 {
			t.Fatalf("degenerate run: %d of 3000 present", present)
		}
		fill, err := s.Fill(ctx)
		if err != nil || fill[len(fill)-1] == 0 {
			t.Errorf("Fill = %v, %v", fill, err)
		}
		if err := s.Delete(ctx); err != nil {
			t.Error(err)
		}
	})

	t.Run("seen atomic goroutines", func(t *testing.T) {
		checkSeenAtomicGoroutines(t, dial(t, "atomic:"))
	})

	t.Run("seen exact atomic", func(t *testing.T) {
		// The exact check's buckets are keys the script names itself,
		// under its shard's hash tag: on the shard's slot.
		checkSeenExactAtomic(t, dial(t, "exact:"), SeenOptions{Filter: tinyFilter, Exact: true, Salted: true, MaxBatch: 64})
		checkSeenExactAtomic(t, dial(t, "exactgrow:"), SeenOptions{Exact: true, Salted: true, MaxBatch: 64,
			// A first generation of all 3,000 keys at a loose rate: 16
			// shards of at least a 512-bit block per layer would make a
			// small one err too rarely for the test.
			Growth: &mlbf.ScalableOptions{ExpectedURLs: 3000, FalsePositiveRate: 0.5, Layers: 2}})
	})

	t.Run("seen grows", func(t *testing.T) {
		// 16 shards, each growing at least twice during the race.
		checkSeenGrowthAtomic(t, dial(t, "grow:"), dial(t, "grow:"), 0)
	})

	t.Run("seen atomic processes", func(t *testing.T) {
		counts := runSeenProcesses(t, url, "procs:")
		for i, n := range counts {
			if n != 1 {
				t.Errorf("key %d reported new %d times across processes, want exactly 1", i, n)
			}
		}
	})

	t.Run("continuous schedule and pace", func(t *testing.T) {
		// Two workers share one continuous crawl: its due set, records
		// and pace sit on the frontier's slot with its queues.
		workers := make([]*Frontier, 2)
		for i := range workers {
			c := dial(t, "cont:")
			s, err := OpenSeen(ctx, c, SeenOptions{Filter: crawlFilter})
			if err != nil {
				t.Fatal(err)
			}
			o := continuousOptions(nil)
			o.Seen, o.Normalizer = s, testNormalizer(t)
			if workers[i], err = Open(ctx, c, o); err != nil {
				t.Fatal(err)
			}
		}
		g := graph{n: 30}
		var urls []string
		for i := 0; i < g.n; i++ {
			urls = append(urls, g.url(i))
		}
		if _, err := workers[0].AddSeeds(ctx, urls); err != nil {
			t.Fatal(err)
		}
		testTwoWorkers(t, workers, urls)
		testPaceShared(t, workers)
	})

	for _, order := range []frontier.Order{frontier.OrderFIFO, frontier.OrderInlinks} {
		name, prefix := "frontier crawl", "crawl:"
		if order == frontier.OrderInlinks {
			name, prefix = "frontier crawl inlinks", "crawlinlinks:"
		}
		t.Run(name, func(t *testing.T) {
			g := graph{n: 600}
			var mu sync.Mutex
			count := make([]int, g.n)
			workers := make([]*Frontier, 2)
			for i := range workers {
				c := dial(t, prefix)
				s, err := OpenSeen(ctx, c, SeenOptions{Filter: crawlFilter}) // 16 shards
				if err != nil {
					t.Fatal(err)
				}
				if workers[i], err = Open(ctx, c, Options{Seen: s, Normalizer: testNormalizer(t), Order: order, Politeness: frontier.PolitenessOptions{Delay: -1}, Poll: 10 * time.Millisecond}); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range workers {
				if _, err := f.AddSeeds(ctx, g.seeds()); err != nil {
					t.Fatal(err)
				}
			}
			crawlWorkers(ctx, workers, g, 3, func(i int) { mu.Lock(); count[i]++; mu.Unlock() })(t)
			for i, n := range count {
				if n != 1 {
					t.Errorf("page %d fetched %d times, want 1", i, n)
				}
			}
			// What `crawler status --redis-cluster` reads.
			c := dial(t, prefix)
			st, err := ReadStats(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if st.Pages != uint64(g.n) || st.Served != uint64(g.n) || st.New != uint64(g.n) || st.Queued != 0 || st.Leased != 0 {
				t.Errorf("Stats = %+v, want %d pages served and fetched, %d new (seeds included), nothing queued or leased", st, g.n, g.n)
			}
			if params, err := ReadSeenParams(ctx, c); err != nil || !strings.Contains(params, "shards=16") {
				t.Errorf("ReadSeenParams = %q, %v; want the 16-shard parameters", params, err)
			}
			if order == frontier.OrderInlinks {
				// Page 1 is linked from pages 0, 2 and 3 (and itself).
				if n, err := workers[0].inlinkCounts(ctx, []string{g.url(1)}); err != nil || n[0] < 3 {
					t.Errorf("in-link count of page 1 = %v, %v; want at least 3", n, err)
				}
			}
		})
	}
}

// masterOf returns the id of the node serving key's slot (each shard of
// the test Cluster is one master).
func masterOf(ctx context.Context, rdb *redis.ClusterClient, key string) (string, error) {
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return "", err
	}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		return "", err
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if r.Start <= slot && slot <= r.End && len(sh.Nodes) > 0 {
				return sh.Nodes[0].ID, nil
			}
		}
	}
	return "", fmt.Errorf("no master serves slot %d of %s", slot, key)
}

// runSeenProcesses runs three seenHelper processes against the Redis at
// url under prefix and returns how often each of their keys was reported
// new, over all of them.
func runSeenProcesses(t *testing.T, url, prefix string) []int {
	t.Helper()
	const procs = 3
	outs := make([]strings.Builder, procs)
	cmds := make([]*exec.Cmd, procs)
	for p := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=seen", "LCREDIS_URL="+url, "LCREDIS_PREFIX="+prefix, "LCREDIS_SEED="+strconv.Itoa(p+1))
		cmd.Stdout = &outs[p]
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[p] = cmd
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v", p, err)
		}
	}
	counts := make([]int, 3000)
	for p := range outs {
		for _, f := range strings.Fields(outs[p].String()) {
			i, err := strconv.Atoi(f)
			if err != nil || i < 0 || i >= len(counts) {
				t.Fatalf("process %d printed %q", p, f)
			}
			counts[i]++
		}
	}
	return counts
}
