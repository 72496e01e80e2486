package crawl

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/zeebo/xxh3"

	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/internal/mutate"
	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/neardup"
)

// The shared index answers as the local one (neardup.MinHash with the
// crawler's options) for a sequence of pages checked by two workers in
// turn, keeps NearDuplicatePages pages and adds a page once.
func TestRedisNearDups(t *testing.T) {
	prefix := testRedisPrefix(t, "neardup")
	rdb := redis.NewClient(&redis.Options{Addr: capturesTestRedis})
	defer rdb.Close()
	ctx := context.Background()
	var workers [2]*redisNearDups
	for i := range workers {
		workers[i] = newTestRedisNearDups(t, rdb, prefix, 60)
	}
	local, err := neardup.NewMinHash(nearDupOptions)
	if err != nil {
		t.Fatal(err)
	}
	set := neardup.NewSet(local)

	rng := rand.New(rand.NewPCG(3, 4))
	vocab := mutate.Vocabulary(rng, 5000)
	var texts [][]string
	for range 40 {
		texts = append(texts, mutate.Text(rng, vocab, 200+rng.IntN(200)))
	}
	// 40 pages, then 30 edited copies (1-20% of words): the last 10 find
	// the index full and are checked, not added.
	matched := 0
	for i := range 70 {
		words := texts[i%40]
		if i >= 40 {
			words = mutate.Words(rng, words, vocab, []float64{0.01, 0.05, 0.2}[i%3])
		}
		u := fmt.Sprintf("http://h/%d", i)
		id := xxh3.HashString(u)
		sh := neardup.ShingleHashes(strings.Join(words, " "), 0)
		of, r, err := workers[i%2].testAndAdd(ctx, id, u, sh, 0.7)
		if err != nil {
			t.Fatal(err)
		}
		doc := &neardup.Doc{Shingles: sh}
		var want []neardup.Match
		if set.Len() < 60 {
			want = set.TestAndAdd(id, doc, 0.7)
		} else {
			want = set.Query(doc, 0.7)
		}
		switch {
		case len(want) == 0 && of != "":
			t.Errorf("page %d: shared index says %s at %.3f, the local one nothing", i, of, r)
		case len(want) > 0 && (of == "" || r != want[0].Resemblance):
			t.Errorf("page %d: shared index says %q at %.3f, the local one %v", i, of, r, want)
		case len(want) > 0:
			matched++
			if want := fmt.Sprintf("http://h/%d", i%40); of != want {
				t.Errorf("page %d: near-duplicate of %s, want %s", i, of, want)
			}
		}
	}
	if matched < 15 {
		t.Errorf("only %d of 30 copies matched", matched)
	}
	if n, err := rdb.HLen(ctx, prefix+"{neardup}:sigs").Result(); err != nil || n != 60 {
		t.Errorf("%d pages indexed (%v), want the limit, 60", n, err)
	}
	// The same page again (a retried call, a fetch after a crash): not
	// matched with itself, not added twice.
	u := "http://h/0"
	if of, _, err := workers[1].testAndAdd(ctx, xxh3.HashString(u), u, neardup.ShingleHashes(strings.Join(texts[0], " "), 0), 0.7); err != nil || of == u {
		t.Errorf("page 0 again: %q, %v", of, err)
	}
	for b := range nearDupOptions.Bands {
		n, err := rdb.HLen(ctx, fmt.Sprintf("%s{neardup}:b%d", prefix, b)).Result()
		if err != nil || n == 0 || n > 60 {
			t.Errorf("band %d: %d keys (%v)", b, n, err)
		}
	}
}

// A band key shared by very many pages keeps the newest
// redisNearDupChain of them.
func TestRedisNearDupsChain(t *testing.T) {
	prefix := testRedisPrefix(t, "neardupchain")
	rdb := redis.NewClient(&redis.Options{Addr: capturesTestRedis})
	defer rdb.Close()
	nd := newTestRedisNearDups(t, rdb, prefix, -1)
	ctx := context.Background()
	sh := neardup.ShingleHashes(strings.Repeat("the same template text again ", 30), 0)
	for i := range redisNearDupChain + 20 {
		u := fmt.Sprintf("http://h/%d", i)
		of, r, err := nd.testAndAdd(ctx, xxh3.HashString(u), u, sh, 0.7)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("http://h/%d", i-1); i > 0 && (of != want || r != 1) {
			t.Fatalf("page %d: %q at %.3f, want the newest, %s, at 1", i, of, r, want)
		}
	}
	for b := range nearDupOptions.Bands {
		vals, err := rdb.HVals(ctx, fmt.Sprintf("%s{neardup}:b%d", prefix, b)).Result()
		if err != nil || len(vals) != 1 || len(vals[0]) != 8*redisNearDupChain {
			t.Errorf("band %d: %d keys, chain of %d bytes (%v), want one of %d", b, len(vals), len(vals[0]), err, 8*redisNearDupChain)
		}
	}
}

// Two workers of a Redis-mode crawl share one index: it holds every HTML
// page either fetched, and the press releases of testweb's near-duplicate
// hosts are found as in a local crawl.
func TestNearDuplicatesTestwebRedis(t *testing.T) {
	if raceEnabled {
		t.Skip("a crawl of thousands of pages, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the same code paths are race-tested on smaller crawls")
	}
	prefix := testRedisPrefix(t, "neardupweb")
	w, want := startWeb(t, testweb.Options{Seed: 3, Hosts: 12, Pages: 600, NearDuplicates: true}, testweb.ExpectOptions{})
	if len(want.NearDuplicates) == 0 {
		t.Fatal("testweb made no near-duplicate groups")
	}
	dir := t.TempDir()
	o := Options{Seeds: w.Seeds(), Dir: dir, Concurrency: 4, ExpectedURLs: 100_000}
	o.Politeness.Delay = -1
	o.Admission.MaxDepth = -1
	o.Fetch.AllowPrivate = true
	o.Fetch.Resolver = w.Resolver()
	stats := runRedisWorkers(t, 2, o, prefix)
	logs, _ := filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
	group := map[string]int{}
	for i, g := range want.NearDuplicates {
		for _, u := range g {
			group[u] = i + 1
		}
	}
	html, firsts, found, repeats := 0, 0, 0, 0
	seen := map[int]bool{}
	for _, l := range logs {
		for _, e := range readLog(t, l) {
			if e.Status >= 200 && e.Status < 300 && isHTML(e.ContentType) {
				html++
			}
			g := group[e.URL]
			if g == 0 {
				continue
			}
			if !seen[g] {
				seen[g] = true
				firsts++
			}
			if e.NearDuplicateOf != "" {
				found++
				if group[e.NearDuplicateOf] != g {
					t.Errorf("%s: near_duplicate_of %s, outside its group", e.URL, e.NearDuplicateOf)
				}
			} else {
				repeats++ // logged without a match: the first of its group, or missed
			}
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: capturesTestRedis})
	defer rdb.Close()
	n, err := rdb.HLen(context.Background(), prefix+"{neardup}:sigs").Result()
	if err != nil || int(n) > html || int(n) < html*9/10 {
		t.Errorf("the shared index holds %d pages (%v); the workers fetched %d HTML pages", n, err, html)
	}
	if repeats > firsts || found == 0 {
		t.Errorf("%d group pages without a match for %d groups, %d found", repeats, firsts, found)
	}
	if s := stats[0].Fetch.NearDuplicates + stats[1].Fetch.NearDuplicates; s != uint64(found) {
		t.Errorf("Stats count %d near-duplicates, the logs %d", s, found)
	}
	t.Logf("%d HTML pages, %d indexed, %d groups, %d found", html, n, firsts, found)
}

// BenchmarkRedisNearDups checks and adds pages in the shared index and
// reports Redis's CPU per page (the commands' own time, from INFO
// commandstats) and its memory per page indexed (the growth of INFO
// used_memory): run it on an otherwise idle Redis.
//
//   - distinct: pages of 300-600 words, each its own text, so that few
//     pages share a band;
//   - template: pages that are one site's template of 300 words plus 10-40
//     words of their own, as generated catalogues and small forum pages
//     are, so that every band's chain is full and a page has hundreds of
//     candidates.
func BenchmarkRedisNearDups(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := mutate.Vocabulary(rng, 20000)
	distinct := make([][]uint64, 1000)
	for i := range distinct {
		distinct[i] = neardup.ShingleHashes(strings.Join(mutate.Text(rng, vocab, 300+rng.IntN(300)), " "), 0)
	}
	template := mutate.Text(rng, vocab, 300)
	templated := make([][]uint64, 1000)
	for i := range templated {
		own := mutate.Text(rng, vocab, 10+rng.IntN(30))
		templated[i] = neardup.ShingleHashes(strings.Join(template, " ")+" "+strings.Join(own, " "), 0)
	}
	for _, bc := range []struct {
		name  string
		pages [][]uint64
	}{{"distinct", distinct}, {"template", templated}} {
		b.Run(bc.name, func(b *testing.B) {
			prefix := testRedisPrefix(b, "neardupbench")
			rdb := redis.NewClient(&redis.Options{Addr: capturesTestRedis})
			defer rdb.Close()
			nd := newTestRedisNearDups(b, rdb, prefix, -1)
			ctx := context.Background()
			used, usec := redisMemory(b, rdb), redisCommandsUsec(b, rdb)
			i := 0
			for b.Loop() {
				sh := bc.pages[i%len(bc.pages)]
				// Each page distinct: its shingles shifted by its number.
				page := make([]uint64, len(sh))
				for j, s := range sh {
					page[j] = s + uint64(i/len(bc.pages))*0x9e3779b97f4a7c15
				}
				u := fmt.Sprintf("http://host%d.example/section/page-%d.html", i%100, i)
				if _, _, err := nd.testAndAdd(ctx, xxh3.HashString(u), u, page, 0.7); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(redisCommandsUsec(b, rdb)-usec)/float64(i), "redis-µs/page")
			b.ReportMetric(float64(redisMemory(b, rdb)-used)/float64(i), "redis-B/page")
		})
	}
}

// redisInfo returns the integer fields of an INFO section: for
// "commandstats", each command's usec field (key "cmdstat_NAME").
func redisInfo(tb testing.TB, rdb *redis.Client, section string) map[string]int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]int64{}
	for _, l := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		if rest, ok := strings.CutPrefix(v, "calls="); ok { // commandstats
			for _, f := range strings.Split(rest, ",") {
				if us, ok := strings.CutPrefix(f, "usec="); ok {
					v = us
				}
			}
		}
		var n int64
		if _, err := fmt.Sscan(v, &n); err == nil {
			m[k] = n
		}
	}
	return m
}

func redisMemory(tb testing.TB, rdb *redis.Client) int64 {
	return redisInfo(tb, rdb, "memory")["used_memory"]
}

// redisCommandsUsec returns the microseconds Redis has spent in commands
// (scripts included) since its statistics were last reset.
func redisCommandsUsec(tb testing.TB, rdb *redis.Client) int64 {
	var sum int64
	for _, us := range redisInfo(tb, rdb, "commandstats") {
		sum += us
	}
	return sum
}

// newTestRedisNearDups returns a worker's shared index under prefix,
// keeping at most max pages.
func newTestRedisNearDups(tb testing.TB, rdb *redis.Client, prefix string, max int64) *redisNearDups {
	tb.Helper()
	client, err := redisfrontier.NewClient(rdb, redisfrontier.Config{Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	nd, err := newRedisNearDups(client, max)
	if err != nil {
		tb.Fatal(err)
	}
	return nd
}

// A worker's signature cache holds at most redisNearDupCache signatures,
// evicting the oldest, and reports the ids it does not hold.
func TestSigCache(t *testing.T) {
	var c sigCache
	for i := range uint64(redisNearDupCache + 10) {
		c.put(i, fmt.Sprint(i))
	}
	c.put(20, "again") // held: unchanged
	if len(c.m) != redisNearDupCache {
		t.Fatalf("%d cached, want %d", len(c.m), redisNearDupCache)
	}
	ids := []uint64{0, 9, 10, 20, redisNearDupCache + 9, redisNearDupCache + 10}
	vals := make([]string, len(ids))
	missing := c.get(ids, vals)
	if fmt.Sprint(missing) != "[0 1 5]" {
		t.Errorf("missing %v, want the first ten evicted and the one never put: [0 1 5]", missing)
	}
	if vals[2] != "10" || vals[3] != "20" || vals[4] != fmt.Sprint(redisNearDupCache+9) {
		t.Errorf("values %q", vals)
	}
}

// A candidate whose signature is gone from Redis (the index cleared by
// hand) is skipped, not an error, and a worker's cached signatures give
// the same answer as Redis's.
func TestRedisNearDupsMissingSignature(t *testing.T) {
	prefix := testRedisPrefix(t, "neardupmissing")
	rdb := redis.NewClient(&redis.Options{Addr: capturesTestRedis})
	defer rdb.Close()
	ctx := context.Background()
	a, b := newTestRedisNearDups(t, rdb, prefix, -1), newTestRedisNearDups(t, rdb, prefix, -1)
	sh := neardup.ShingleHashes(strings.Repeat("one template of many pages ", 30), 0)
	for i, w := range []*redisNearDups{a, a, b} {
		u := fmt.Sprintf("http://h/%d", i)
		of, r, err := w.testAndAdd(ctx, xxh3.HashString(u), u, sh, 0.7)
		if want := fmt.Sprintf("http://h/%d", i-1); err != nil || i > 0 && (of != want || r != 1) {
			t.Fatalf("page %d: %q at %v (%v), want %s at 1", i, of, r, err, want)
		}
	}
	// b has no signature cached but its own page 2's: page 1's is gone.
	if err := rdb.HDel(ctx, prefix+"{neardup}:sigs", string(binary.BigEndian.AppendUint64(nil, xxh3.HashString("http://h/1")))).Err(); err != nil {
		t.Fatal(err)
	}
	u := "http://h/3"
	if of, _, err := b.testAndAdd(ctx, xxh3.HashString(u), u, sh, 0.7); err != nil || of != "http://h/2" {
		t.Errorf("page 3 on the worker without page 1's signature: %q (%v), want page 2", of, err)
	}
	u = "http://h/4"
	if of, _, err := a.testAndAdd(ctx, xxh3.HashString(u), u, sh, 0.7); err != nil || of != "http://h/3" {
		t.Errorf("page 4: %q (%v), want page 3", of, err)
	}
}
