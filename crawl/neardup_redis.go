package crawl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

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
// One script compares a page with the candidates of its band keys and
// adds it, so two workers fetching near-duplicates at once see each other.
// A worker keeps no copy: Options.NearDuplicatePages bounds the pages
// indexed (HLEN of sigs).
type redisNearDups struct {
	client *redisfrontier.Client
	mh     *neardup.MinHash // signatures and band keys only: holds no page
	max    int64            // pages indexed at most; negative: no limit
	keys   []string         // the script's keys: sigs, then the bands
}

// redisNearDupChain is the most page ids a band key keeps, as
// neardup.MinHash's chains: a band shared by a site's template stops
// there.
const redisNearDupChain = 256

// nearDupScript: KEYS[1] the signatures' hash, KEYS[2..] the bands'
// hashes; ARGV[1] the page's id (8 bytes), ARGV[2] its signature, ARGV[3]
// its URL, ARGV[4] the least number of equal values reported, ARGV[5] the
// most pages indexed (negative: no limit), ARGV[6] the longest chain,
// ARGV[7..] the band keys (8 bytes each, one per band hash). Returns the
// URL of the indexed page with the most equal values (at least ARGV[4])
// and that number, or false; adds the page unless the index is full or
// holds its id already.
var nearDupScript = redis.NewScript(`
local id, sig = ARGV[1], ARGV[2]
local slen = #sig
local need = tonumber(ARGV[4])
local bestURL, bestEq = false, -1
local seen = {}
for b = 2, #KEYS do
  local chain = redis.call('HGET', KEYS[b], ARGV[b + 5])
  if chain then
    for i = #chain - 7, 1, -8 do
      local other = string.sub(chain, i, i + 7)
      if other ~= id and not seen[other] then
        seen[other] = true
        local v = redis.call('HGET', KEYS[1], other)
        if v then
          local eq = 0
          for j = 1, slen, 4 do
            if string.sub(v, j, j + 3) == string.sub(sig, j, j + 3) then eq = eq + 1 end
          end
          if eq >= need and eq > bestEq then bestURL, bestEq = string.sub(v, slen + 1), eq end
        end
      end
    end
  end
end
local max = tonumber(ARGV[5])
if max < 0 or redis.call('HLEN', KEYS[1]) < max then
  if redis.call('HSETNX', KEYS[1], id, sig .. ARGV[3]) == 1 then
    local keep = 8 * tonumber(ARGV[6])
    for b = 2, #KEYS do
      local chain = (redis.call('HGET', KEYS[b], ARGV[b + 5]) or '') .. id
      if #chain > keep then chain = string.sub(chain, #chain - keep + 1) end
      redis.call('HSET', KEYS[b], ARGV[b + 5], chain)
    end
  end
end
if bestURL then return {bestURL, bestEq} end
return false
`)

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
// pages indexed by every worker and adds it, in one step. It returns the
// URL of the page it resembles most at min or more, and the estimated
// resemblance.
func (r *redisNearDups) testAndAdd(ctx context.Context, id uint64, u string, shingles []uint64, min float64) (string, float64, error) {
	sig := r.mh.Signature(shingles)
	if sig == nil {
		return "", 0, nil
	}
	k := len(sig)
	sigBytes := make([]byte, 0, 4*k)
	for _, v := range sig {
		sigBytes = binary.BigEndian.AppendUint32(sigBytes, v)
	}
	need := 0
	for float64(need)/float64(k) < min { // the least count whose share reaches min
		need++
	}
	args := []any{binary.BigEndian.AppendUint64(nil, id), sigBytes, u, need, r.max, redisNearDupChain}
	for _, key := range r.mh.BandKeys(sig) {
		args = append(args, binary.BigEndian.AppendUint64(nil, key))
	}
	// Retried through a Redis restart like the frontier's calls; a repeat
	// of a call that ran finds the page's own id, which it skips, and
	// does not add it twice.
	var res any
	err := r.client.Retry(ctx, func(ctx context.Context) error {
		var err error
		res, err = nearDupScript.Run(ctx, r.client.Redis(), r.keys, args...).Result()
		return err
	})
	switch {
	case errors.Is(err, redis.Nil):
		return "", 0, nil
	case err != nil:
		return "", 0, fmt.Errorf("crawl: near-duplicate index: %w", err)
	}
	pair, ok := res.([]any)
	if !ok || len(pair) != 2 {
		return "", 0, fmt.Errorf("crawl: near-duplicate index: reply %T", res)
	}
	of, ok1 := pair[0].(string)
	eq, ok2 := pair[1].(int64)
	if !ok1 || !ok2 || eq < 0 || eq > int64(k) {
		return "", 0, fmt.Errorf("crawl: near-duplicate index: reply %v", pair)
	}
	return of, float64(eq) / float64(k), nil
}
