package crawl

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/neardup"
)

// redisNearDups is the near-duplicate index of a Redis-mode crawl, shared
// by its workers: the same MinHash-LSH as a local crawl's (the signatures
// and band keys come from neardup.MinHash), kept in Redis under one hash
// tag, PREFIX{neardup}:
//
//	sigs   hash: page id (8 bytes) -> signature (4 bytes per value) | URL
//	b0..bN hashes, one per band: band key (8 bytes) -> the ids of the pages
//	       with that key, 8 bytes each, the newest last, at most maxChain
//
// One script returns a page's candidates (the chains of its band keys) and
// adds it, so of two workers fetching near-duplicates at once the later
// sees the earlier. The worker compares the page with the candidates'
// signatures itself: Redis is shared by every worker of a crawl, and
// comparing in the script cost it 1.6 ms per page on a site whose pages
// share a template (hundreds of candidates each; BenchmarkRedisNearDups).
// Signatures never change once written, so each worker keeps the ones it
// fetched in a bounded cache. Options.NearDuplicatePages bounds the pages
// indexed (HLEN of sigs).
type redisNearDups struct {
	client *redisfrontier.Client
	mh     *neardup.MinHash // signatures and band keys only: holds no page
	max    int64            // pages indexed at most; negative: no limit
	keys   []string         // the script's keys: sigs, then the bands
	cache  sigCache
}

// redisNearDupChain is the most page ids a band key keeps, as
// neardup.MinHash's chains: a band shared by a site's template stops
// there.
const redisNearDupChain = 256

// redisNearDupCache is the most signatures a worker keeps: about 250 bytes
// each with its URL, 4 MB. A page has at most Bands*redisNearDupChain
// candidates (2,048), and on a site whose pages share a template they are
// the newest pages, which the cache holds.
const redisNearDupCache = 16384

// nearDupScript: KEYS[1] the signatures' hash, KEYS[2..] the bands'
// hashes; ARGV[1] the page's id (8 bytes), ARGV[2] its signature and URL
// (the value of sigs), ARGV[3] the most pages indexed (negative: no
// limit), ARGV[4] the longest chain, ARGV[5..] the band keys (8 bytes
// each, one per band hash). Returns the chains of the band keys as they
// were before the page was added ("" for none), in band order; adds the
// page unless the index is full or holds its id already.
var nearDupScript = redis.NewScript(`
local id = ARGV[1]
local chains = {}
for b = 2, #KEYS do
  chains[b - 1] = redis.call('HGET', KEYS[b], ARGV[b + 3]) or ''
end
local max = tonumber(ARGV[3])
if max < 0 or redis.call('HLEN', KEYS[1]) < max then
  if redis.call('HSETNX', KEYS[1], id, ARGV[2]) == 1 then
    local keep = 8 * tonumber(ARGV[4])
    for b = 2, #KEYS do
      local chain = chains[b - 1] .. id
      if #chain > keep then chain = string.sub(chain, #chain - keep + 1) end
      redis.call('HSET', KEYS[b], ARGV[b + 3], chain)
    end
  end
end
return chains
`)

// sigCache holds signatures (with their URLs, as in the sigs hash) by page
// id, at most redisNearDupCache, evicting the oldest. It is safe for
// concurrent use.
type sigCache struct {
	mu   sync.Mutex
	m    map[uint64]string
	ring []uint64 // the ids in insertion order, circular once full
	next int      // the ring's oldest id once full
}

// get fills vals[i] with the cached value of ids[i] and returns the
// indexes of those it does not hold.
func (c *sigCache) get(ids []uint64, vals []string) (missing []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range ids {
		v, ok := c.m[id]
		if !ok {
			missing = append(missing, i)
		}
		vals[i] = v
	}
	return missing
}

func (c *sigCache) put(id uint64, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[uint64]string)
	}
	if _, ok := c.m[id]; ok {
		return
	}
	if len(c.ring) < redisNearDupCache {
		c.ring = append(c.ring, id)
	} else {
		delete(c.m, c.ring[c.next])
		c.ring[c.next] = id
		c.next = (c.next + 1) % len(c.ring)
	}
	c.m[id] = v
}

func newRedisNearDups(client *redisfrontier.Client, max int64) (*redisNearDups, error) {
	mh, err := neardup.NewMinHash(nearDupOptions)
	if err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	base := client.Prefix() + "{neardup}:"
	keys := []string{base + "sigs"}
	for b := range mh.Options().Bands {
		keys = append(keys, base+"b"+strconv.Itoa(b))
	}
	return &redisNearDups{client: client, mh: mh, max: max, keys: keys}, nil
}

// testAndAdd compares a page (its id, URL and shingle hashes) with the
// pages indexed by every worker and adds it. It returns the URL of the
// page it resembles most at min or more, and the estimated resemblance.
// Of pages equally close, it names the first found: bands in order, the
// newest first within a band.
func (r *redisNearDups) testAndAdd(ctx context.Context, id uint64, u string, shingles []uint64, min float64) (string, float64, error) {
	sig := r.mh.Signature(shingles)
	if sig == nil {
		return "", 0, nil
	}
	k := len(sig)
	val := make([]byte, 0, 4*k+len(u))
	for _, v := range sig {
		val = binary.BigEndian.AppendUint32(val, v)
	}
	val = append(val, u...)
	need := 0
	for float64(need)/float64(k) < min { // the least count whose share reaches min
		need++
	}
	idb := binary.BigEndian.AppendUint64(nil, id)
	args := []any{idb, val, r.max, redisNearDupChain}
	for _, key := range r.mh.BandKeys(sig) {
		args = append(args, binary.BigEndian.AppendUint64(nil, key))
	}
	// Retried through a Redis restart like the frontier's calls; a repeat
	// of a call that ran finds the page's own id, which is skipped, and
	// does not add it twice.
	var res any
	err := r.client.Retry(ctx, func(ctx context.Context) error {
		var err error
		res, err = nearDupScript.Run(ctx, r.client.Redis(), r.keys, args...).Result()
		return err
	})
	if err != nil {
		return "", 0, fmt.Errorf("crawl: near-duplicate index: %w", err)
	}
	chains, ok := res.([]any)
	if !ok || len(chains) != len(r.keys)-1 {
		return "", 0, fmt.Errorf("crawl: near-duplicate index: reply %T of %d chains, want %d", res, len(chains), len(r.keys)-1)
	}
	var cands []uint64
	seen := map[uint64]bool{id: true}
	for _, c := range chains {
		chain, ok := c.(string)
		if !ok || len(chain)%8 != 0 {
			return "", 0, fmt.Errorf("crawl: near-duplicate index: chain %q", c)
		}
		for i := len(chain) - 8; i >= 0; i -= 8 {
			other := uint64(be32(chain, i))<<32 | uint64(be32(chain, i+4))
			if !seen[other] {
				seen[other] = true
				cands = append(cands, other)
			}
		}
	}
	r.cache.put(id, string(val))
	if len(cands) == 0 {
		return "", 0, nil
	}
	vals := make([]string, len(cands))
	if missing := r.cache.get(cands, vals); len(missing) > 0 {
		fields := make([]string, len(missing))
		for j, i := range missing {
			fields[j] = string(binary.BigEndian.AppendUint64(nil, cands[i]))
		}
		var got []any
		err := r.client.Retry(ctx, func(ctx context.Context) error {
			var err error
			got, err = r.client.Redis().HMGet(ctx, r.keys[0], fields...).Result()
			return err
		})
		if err != nil {
			return "", 0, fmt.Errorf("crawl: near-duplicate index: signatures: %w", err)
		}
		for j, i := range missing {
			if v, ok := got[j].(string); ok && len(v) >= 4*k {
				vals[i] = v
				r.cache.put(cands[i], v)
			} // else not there (the index was cleared) or not one of ours: no candidate
		}
	}
	bestURL, bestEq := "", -1
	for _, v := range vals {
		if len(v) < 4*k {
			continue
		}
		eq := 0
		for j, s := range sig {
			if be32(v, 4*j) == s {
				eq++
			}
		}
		if eq >= need && eq > bestEq {
			bestURL, bestEq = v[4*k:], eq
		}
	}
	if bestEq < 0 {
		return "", 0, nil
	}
	return bestURL, float64(bestEq) / float64(k), nil
}

// be32 reads the big-endian uint32 at s[i:].
func be32(s string, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i])<<24 | uint32(s[i+1])<<16 | uint32(s[i+2])<<8 | uint32(s[i+3])
}
