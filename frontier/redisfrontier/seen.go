package redisfrontier

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/mlbf"
)

// SeenOptions configures a Seen. The zero value is valid.
type SeenOptions struct {
	// Filter sizes the whole filter, as for mlbf.New. Default: mlbf's
	// defaults (improved mode, 3.5 million URLs at 1%).
	Filter mlbf.Options
	// Shards is how many independent filters the bits are split into, each
	// under its own Cluster hash tag; a key is routed to one shard by its
	// integrity hash. Default 1 on a single Redis server and 16 on a
	// Redis Cluster (so that the filter spreads over the masters), raised
	// as needed so that no Redis key exceeds MaxKeyBytes. Every script call
	// covers one shard, so fewer shards mean fewer, larger calls.
	Shards int
	// MaxKeyBytes bounds the size of one shard's bitmap key, which holds
	// all its layers; default 128 MiB (a Redis string holds at most
	// 512 MiB).
	MaxKeyBytes uint64
	// MaxBatch is the most URLs one script call checks, so that no call
	// blocks Redis for long; default 4096. It is stored with the filter
	// (replaying a dead worker's batch needs the same split into calls).
	MaxBatch int
	// ResultTTL is how long a script call's answer is kept in Redis so
	// that a call retried after a lost reply gets the same answer instead
	// of finding its own bits set, and so that a dead worker's batch can
	// be finished by another; default 1 hour. It must exceed the
	// frontier's lease.
	ResultTTL time.Duration
	// NoLocalBits turns off the worker's copy of the bits it knows are set
	// in Redis. With it (the default) probes of bits already known to be
	// set are not sent: bits only ever go from 0 to 1, so the answers are
	// the same, and common segments (hosts, directories) stop costing
	// server work. It takes the filter's size in memory.
	//
	// With Growth, each worker holds every old generation of every shard
	// whatever NoLocalBits says (it tests them locally; see Growth), and
	// NoLocalBits only drops its copy of the newest generations' bits.
	NoLocalBits bool
	// Growth, when set, makes the filter grow (scalable Bloom filters,
	// Almeida et al. 2007; see mlbf.Scalable): each shard is a sequence of
	// generations, generation i sized by Growth.Generation(i) split over
	// the shards, and a shard adds a generation when its newest has
	// reported new as many keys as it is sized for, so that the compound
	// false-positive rate stays within Growth.FalsePositiveRate however
	// many URLs arrive. Growth.ExpectedURLs is the first generation's
	// capacity (over all shards); Growth.Growth and Tightening are as in
	// mlbf (defaults 2 and 0.5). Layers come from Filter.Layers (or
	// Growth.Layers; they must agree when both are set); the generations
	// are improved-mode filters of derived sizing, so Filter must leave
	// Mode, Hashes, LayerBits, BitsPerLayer, ExpectedURLs,
	// FalsePositiveRate, ExpectedSegments and LayerFalsePositiveRate zero.
	// Default nil: a fixed filter of Filter's size, as before growth
	// existed (its Redis keys and parameters are unchanged). The growth
	// parameters are stored with the filter: workers must agree on them.
	Growth *mlbf.ScalableOptions
	// Salted gives the seen-set a per-crawl hash salt (mlbf.Options.Salt):
	// the worker that creates the seen-set draws it at random and stores
	// it with the parameters, and every other worker, and every later run
	// of the crawl, takes it from there, so that the URLs a filter-only
	// crawl loses to false positives differ from crawl to crawl. A
	// seen-set created unsalted (by an earlier layercrawl, or without
	// Salted) stays unsalted; Seen.Salt reports what was opened. Paper
	// mode is unsalted. Default false: HashID's unsalted positions.
	Salted bool
	// Exact checks every "maybe seen" answer of the filter against the
	// 64-bit fingerprints of the URLs it answered new (see the package
	// documentation, "Exact check"), in the same script call, so that no
	// new URL is lost to a false positive. It is fixed when the seen-set
	// is created: a worker opening an existing one takes its mode
	// (Seen.Exact reports it). Default false: filter-only.
	Exact bool
	// ExactURLs sizes the exact check's fingerprint buckets: about
	// ExactURLs/ExactBucketFill buckets in all, so that each stays a
	// compact Redis intset (set-max-intset-entries, 512 by default) up to
	// 3x ExactURLs; past about 4x, buckets become hash tables, several
	// times larger per URL (raise set-max-intset-entries then). Default: the filter's ExpectedURLs (Growth's first
	// capacity with Growth), or mlbf.DefaultExpectedURLs. Stored with the
	// seen-set.
	ExactURLs uint64
}

// ExactBucketFill is the fingerprints an exact check's bucket holds on
// average at SeenOptions.ExactURLs: a quarter of Redis's default
// set-max-intset-entries, so that buckets stay intsets (8 bytes per
// fingerprint) while the crawl stays within 3x its expected URLs (the
// mean is then 384, the standard deviation about 20).
const ExactBucketFill = 128

func (o *SeenOptions) ensureDefaults() {
	if o.MaxKeyBytes == 0 {
		o.MaxKeyBytes = 128 << 20
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 4096
	}
	if o.ResultTTL == 0 {
		o.ResultTTL = time.Hour
	}
}

// Seen is a multi-layer Bloom filter held in Redis: the frontier.Seen of a
// distributed crawl. It is safe for concurrent use; see the package
// documentation for its layout and guarantees.
type Seen struct {
	c        *Client
	lay      *mlbf.Layout // of one shard
	base     []uint64     // bit offset of each layer in a shard's bitmap
	shards   int
	k        int
	maxBatch int
	ttl      int64      // seconds
	fp       string     // parameter fingerprint, stored in every shard marker
	params   string     // human-readable parameters, in the meta key
	keys     [][]string // per shard: marker, "" (the call's result), bitmap
	worker   string     // random id naming this process's script calls
	calls    atomic.Uint64
	// known[shard][layer] holds the bits this worker has seen set in
	// Redis (read and set atomically); nil with NoLocalBits.
	known [][][]uint64
	// grow holds the generations of a growing filter; nil for a fixed
	// one (SeenOptions.Growth).
	grow *seenGrowth
	// salt is the filter's hash salt (SeenOptions.Salted); 0: unsalted.
	salt  uint64
	fresh bool // the seen-set was absent when this worker read the parameters
	// buckets is the exact check's fingerprint buckets per shard
	// (SeenOptions.Exact); 0: filter-only.
	buckets int

	mu      sync.Mutex // protects pending and leading
	pending []*seenReq
	leading bool
}

type seenReq struct {
	seg     []string
	present bool
	err     error
	done    chan struct{}
}

// seenLayout versions how the seen-set's bits sit in Redis; it starts the
// parameters stored in the meta key, so that workers of another layout
// refuse the crawl instead of misreading its bits. v1 (an earlier layercrawl)
// kept each layer of a shard in its own key; v2 keeps all layers of a
// shard in one key, one after the other (see layerOffsets).
const seenLayout = "v2"

// luaSetProbes is the Lua both seen-set scripts send their probes with: it
// declares q and pos (the next probe, and where its offset's digits start)
// and set(c), which sends the next c probes as BITFIELD SET u1 operations,
// seven per call, and passes each call's old bits to fold(r, count). The
// script defines call, byte, sub, bits, lens, offs and fold before it.
const luaSetProbes = `
local q, pos = 1, 1
local function set(c)
  -- Locals, not the upvalues q and pos, in the loop (registers are
  -- cheaper); written back at the end.
  local i, at = q, pos
  local stop = i + c
  while i + 7 <= stop do
    local l1, l2, l3, l4, l5, l6, l7 = byte(lens, i, i + 6)
    local p1 = at + l1
    local p2 = p1 + l2
    local p3 = p2 + l3
    local p4 = p3 + l4
    local p5 = p4 + l5
    local p6 = p5 + l6
    local p7 = p6 + l7
    fold(call('BITFIELD', bits,
      'SET', 'u1', sub(offs, at, p1 - 1), '1', 'SET', 'u1', sub(offs, p1, p2 - 1), '1',
      'SET', 'u1', sub(offs, p2, p3 - 1), '1', 'SET', 'u1', sub(offs, p3, p4 - 1), '1',
      'SET', 'u1', sub(offs, p4, p5 - 1), '1', 'SET', 'u1', sub(offs, p5, p6 - 1), '1',
      'SET', 'u1', sub(offs, p6, p7 - 1), '1'), 7)
    at = p7
    i = i + 7
  end
  if i < stop then
    local a, k = {}, 0
    while i < stop do
      local l = byte(lens, i)
      a[k + 1] = 'SET'; a[k + 2] = 'u1'; a[k + 3] = sub(offs, at, at + l - 1); a[k + 4] = '1'
      k = k + 4
      at = at + l
      i = i + 1
    end
    fold(call('BITFIELD', bits, unpack(a, 1, k)), k / 4)
  end
  q, pos = i, at
end
`

// luaExact is the Lua of the exact check (SeenOptions.Exact), shared by
// both seen-set scripts: exact(c, xp, xl, xd, xs) goes through the first
// c answers of out (the script's local table of '0'/'1' per key) and adds
// each key's fingerprint to its bucket, the set xp..<bucket>. A key the
// filter answered present ('1') whose fingerprint was not in its bucket
// (SADD added it) is a false positive of the filter: its answer becomes
// '2' (new, caught). A key the filter answered new stays new whatever
// SADD says: a Bloom filter's "new" is final, so two URLs whose
// fingerprints collide lose one only if the filter also errs for it. xl
// holds two bytes per key (the digits of its bucket and of its
// fingerprint), xd the digits, concatenated; a fingerprint is sent as a
// signed 64-bit decimal, which Redis keeps in an intset (8 bytes) and Lua
// never turns into a number (a double would round it). The hash xs counts
// the answers checked (checks) and the false positives caught (caught).
// The script defines call, byte, sub and out before it.
const luaExact = `
local function exact(c, xp, xl, xd, xs)
  local at, checks, caught = 1, 0, 0
  for i = 1, c do
    local bl, fl = byte(xl, 2 * i - 1, 2 * i)
    local b = at + bl
    local added = call('SADD', xp .. sub(xd, at, b - 1), sub(xd, b, b + fl - 1))
    at = b + fl
    if out[i] == '1' then
      checks = checks + 1
      if added == 1 then
        out[i] = '2'
        caught = caught + 1
      end
    end
  end
  if checks > 0 then call('HINCRBY', xs, 'checks', checks) end
  if caught > 0 then call('HINCRBY', xs, 'caught', caught) end
end
`

// seenScript checks and inserts a batch of keys of one shard atomically.
//
// KEYS: marker, result, the shard's bitmap, the shard's exact-check
// counters.
// ARGV: fingerprint, result TTL (s), m (keys in the call), then three
// strings describing the probes to test-and-set, then the exact check's
// bucket key prefix ("" without SeenOptions.Exact), buckets and
// fingerprints (see luaExact). The probes, in key order: two bytes
// per key (big-endian: how many of the following probes are its own), one
// byte per probe (the number of digits of its offset), and every probe's
// bit offset in decimal, concatenated. A key's probes are those the
// worker does not know to be set already (bits only go from 0 to 1), minus
// those an earlier key of the same call sends: the call sets them first,
// so this key would find them set.
//
// Each probe is one BITFIELD SET u1 operation, which returns the bit's old
// value; the operations go in order, seven per BITFIELD call, so a key
// repeated in the batch is present from its second occurrence on, exactly
// as if the keys had been inserted one by one. The answer (one '0'/'1' per
// key: '1' when every probe sent for it was set, '2' when it was but the
// exact check found the key new) is kept under the result key for the
// TTL: a retry of the same call returns it unchanged.
//
// Why seven: a call's first 32 arguments reuse cached Redis objects, the
// rest cost an allocation and a free each, and 2 + 7*4 = 30. Per probe,
// this costs Redis about half the CPU of the v1 script, which sent 1,500
// operations per BITFIELD call and one ARGV entry per offset (callgrind,
// BenchmarkSeenVsSADD and docs/BENCHMARKS.md).
var seenScript = redis.NewScript(`
local call = redis.call
local mark = call('GET', KEYS[1])
if not mark then return redis.error_reply('LCLOST seen-set shard marker missing') end
if mark ~= ARGV[1] then return redis.error_reply('LCPARAMS seen-set parameters differ') end
local prev = call('GET', KEYS[2])
if prev then return prev end
local byte, sub = string.byte, string.sub
local bits = KEYS[3]
local m = tonumber(ARGV[3])
local cnt, lens, offs = ARGV[4], ARGV[5], ARGV[6]
if #cnt ~= 2 * m then return redis.error_reply('LCARGS seen-set call: counts for ' .. (#cnt / 2) .. ' keys, want ' .. m) end
local xp, xl = ARGV[7], ARGV[8]
if xp ~= '' and #xl ~= 2 * m then return redis.error_reply('LCARGS seen-set call: fingerprints for ' .. (#xl / 2) .. ' keys, want ' .. m) end
local n = #lens
local out = {}
-- j is the key whose probes come next, left how many of them are left,
-- ans its answer so far.
local j, left, ans = 0, 0, '1'
local function fold(r, c)
  for i = 1, c do
    while left == 0 do
      if j > 0 then out[j] = ans end
      j = j + 1
      ans = '1'
      local hi, lo = byte(cnt, 2 * j - 1, 2 * j)
      left = hi * 256 + lo
    end
    if r[i] == 0 then ans = '0' end
    left = left - 1
  end
end
` + luaSetProbes + luaExact + `set(n)
if left ~= 0 or pos ~= #offs + 1 then return redis.error_reply('LCARGS seen-set call: probe counts and offsets do not add up') end
if j > 0 then out[j] = ans end
for i = j + 1, m do
  local hi, lo = byte(cnt, 2 * i - 1, 2 * i)
  if hi + lo ~= 0 then return redis.error_reply('LCARGS seen-set call: probe counts and offsets do not add up') end
  out[i] = '1'
end
if xp ~= '' then exact(m, xp, xl, ARGV[9], KEYS[4]) end
out = table.concat(out)
call('SET', KEYS[2], out, 'EX', ARGV[2])
return out
`)

// OpenSeen opens the crawl's seen-set in Redis, creating it when absent.
// It fails with an error wrapping ErrIncompatible when the filter in Redis
// was made with other parameters (mode, layers, hashes, layer sizes, shards
// or mlbf.HashID), so that workers of one crawl can never disagree on where
// a URL's bits are.
//
// A filter sized from a target (Hashes left zero, as with Growth) gets
// fewer probes per key than mlbf would give it (SeenSizing), unless that
// would make a shard's bitmap exceed MaxKeyBytes. A crawl that an earlier
// layercrawl started with mlbf's k is opened with that k.
func OpenSeen(ctx context.Context, c *Client, opts SeenOptions) (*Seen, error) {
	s, err := openSeen(ctx, c, opts, true)
	if errors.Is(err, ErrIncompatible) && opts.Filter.Hashes == 0 {
		// Crawls started by an earlier layercrawl took mlbf's k.
		if old, oldErr := openSeen(ctx, c, opts, false); oldErr == nil {
			return old, nil
		}
	}
	return s, err
}

// SeenSizing returns the options a seen-set sizes its filter with: opts
// itself when it sets Hashes or the layer sizes, or is in paper mode;
// otherwise opts with Hashes set to half the k mlbf derives from the
// target (rounded up), raised while the integrity layer would need more
// than 1.5 times the bits it needs at mlbf's k.
//
// Every probe a new URL sets is one BITFIELD operation of the script, so
// Redis's CPU per new URL follows k: BenchmarkSeenVsSADD measured 0.92 µs
// at k=3 and 1.49 µs at mlbf's k=6 for 1%, 1.26 µs at k=4 and 2.03 µs at
// k=8 for 0.1%, against 0.93 µs for a pipelined SADD of the URL's SHA1
// (docs/BENCHMARKS.md, "The Redis seen-set"). A blocked filter's size is flat near
// its best k, so halving k costs 16-37% more bits from 5% to 0.01% (at 1%,
// 12.6 bits per URL instead of 9.9; at 0.1%, 21.5 instead of 15.7): a
// small price next to a SADD set's 640 bits per URL, when one Redis serves
// every worker of a crawl.
func SeenSizing(opts mlbf.Options) mlbf.Options {
	if opts.Hashes != 0 || opts.Mode != mlbf.Improved || len(opts.LayerBits) != 0 || opts.BitsPerLayer != 0 {
		return opts
	}
	integrity := func(o mlbf.Options) (uint64, bool) {
		lay, err := mlbf.NewLayout(o)
		if err != nil {
			return 0, false
		}
		bits := lay.LayerBits()
		return bits[len(bits)-1], true
	}
	d := opts
	d.EnsureDefaults()
	best, ok := integrity(d)
	if !ok {
		return opts // NewLayout reports it
	}
	for k := (d.Hashes + 1) / 2; k < d.Hashes; k++ {
		o := opts
		o.Hashes = k
		if bits, ok := integrity(o); ok && float64(bits) <= 1.5*float64(best) {
			return o
		}
	}
	opts.Hashes = d.Hashes
	return opts
}

// fitSizing returns SeenSizing(opts) if a shard's bitmap of it fits in
// maxKeyBytes with the given shards, and opts otherwise: where the key
// size is the limit (a growing filter's later generations), bits count
// more than Redis's CPU. With a growth of 2 from the crawler's default 10
// million URLs at 0.1%, one shard of 128 MiB then holds three generations
// (70 million URLs) as before SeenSizing, not two.
func fitSizing(opts mlbf.Options, shards int, maxKeyBytes uint64) mlbf.Options {
	fewer := SeenSizing(opts)
	whole, err := mlbf.NewLayout(fewer)
	if err != nil {
		return opts
	}
	lay, err := mlbf.NewLayout(ShardOptions(fewer, whole, shards))
	if err != nil {
		return opts
	}
	if _, total := layerOffsets(lay.LayerBits()); total/8 > maxKeyBytes {
		return opts
	}
	return fewer
}

// openSeen is OpenSeen; fewer says whether a filter sized from a target
// gets SeenSizing's k or mlbf's.
func openSeen(ctx context.Context, c *Client, opts SeenOptions, fewer bool) (*Seen, error) {
	opts.ensureDefaults()
	if opts.MaxBatch < 1 || opts.Shards < 0 || opts.ResultTTL < time.Second {
		return nil, fmt.Errorf("%w: seen-set batch %d, shards %d, result TTL %v", ErrConfig, opts.MaxBatch, opts.Shards, opts.ResultTTL)
	}
	for attempt := 0; ; attempt++ {
		stored, err := ReadSeenParams(ctx, c)
		if err != nil {
			return nil, err
		}
		var st seenState
		if stored == "" {
			// A new seen-set: this worker chooses, and the claim tells
			// whether another worker chose first.
			st.fresh, st.exact = true, opts.Exact
			if opts.Salted && opts.Filter.Mode == mlbf.Improved {
				var b [8]byte
				if _, err := rand.Read(b[:]); err != nil {
					return nil, fmt.Errorf("redisfrontier: seen-set salt: %w", err)
				}
				st.salt = binary.LittleEndian.Uint64(b[:]) | 1 // never 0, the unsalted filter
			}
		} else if st, err = parseSeenState(stored); err != nil {
			return nil, err
		}
		s, err := newSeen(ctx, c, opts, fewer, st)
		if err != nil {
			return nil, err
		}
		err = s.claim(ctx)
		if errors.Is(err, errClaimRace) && attempt == 0 {
			continue // take the salt and mode of the worker that won
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// seenState is what the worker creating a seen-set chooses for the whole
// crawl, beyond the options every worker is given: the salt and the mode.
type seenState struct {
	fresh   bool   // no seen-set in Redis yet: this worker chose
	salt    uint64 // SeenOptions.Salted; 0: unsalted
	exact   bool   // SeenOptions.Exact
	buckets int    // the exact check's buckets per shard, as stored (0: size them)
}

// errClaimRace: another worker created the seen-set between this one's
// reading the parameters and its claim, with another salt or mode.
var errClaimRace = errors.New("redisfrontier: seen-set created by another worker meanwhile")

// parseSeenState reads the salt and the exact check's buckets from stored
// parameters; a seen-set stored without them (an earlier layercrawl's) is
// unsalted and filter-only.
func parseSeenState(stored string) (seenState, error) {
	var st seenState
	for _, f := range strings.Fields(stored) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "salt":
			st.salt, err = strconv.ParseUint(v, 16, 64)
		case "exact":
			st.buckets, err = strconv.Atoi(v)
			if err == nil && st.buckets < 1 {
				err = errors.New("not positive")
			}
			st.exact = true
		}
		if err != nil {
			return st, fmt.Errorf("%w: seen-set parameters: %s=%q: %v", ErrCorrupt, k, v, err)
		}
	}
	return st, nil
}

// newSeen makes the Seen of the options and the crawl's state, before its
// claim.
func newSeen(ctx context.Context, c *Client, opts SeenOptions, fewer bool, st seenState) (*Seen, error) {
	filter := opts.Filter
	if filter.Mode == mlbf.Improved {
		filter.Salt = st.salt
	}
	var growth *mlbf.ScalableOptions
	if opts.Growth != nil {
		gopts := *opts.Growth
		gopts.Salt = st.salt
		g, err := growthOptions(opts.Filter, gopts)
		if err != nil {
			return nil, err
		}
		growth = &g
		// Generation 0 sizes the shards and is the filter of every
		// shard's first generation.
		if filter, err = g.Generation(0); err != nil {
			return nil, fmt.Errorf("%w: seen-set growth: %w", ErrConfig, err)
		}
	}
	if fewer && opts.Shards == 0 {
		filter = SeenSizing(filter) // the shards below are made to fit it
	} else if fewer {
		filter = fitSizing(filter, opts.Shards, opts.MaxKeyBytes)
	}
	whole, err := mlbf.NewLayout(filter)
	if err != nil {
		return nil, fmt.Errorf("redisfrontier: seen-set: %w", err)
	}
	shards := opts.Shards
	if shards == 0 {
		shards = 1
		if _, ok := c.rdb.(*redis.ClusterClient); ok {
			shards = 16
		}
		_, total := layerOffsets(whole.LayerBits())
		shards = max(shards, int((total/8+opts.MaxKeyBytes-1)/opts.MaxKeyBytes))
	}
	lay, err := mlbf.NewLayout(ShardOptions(filter, whole, shards))
	if err != nil {
		return nil, fmt.Errorf("redisfrontier: seen-set shard: %w", err)
	}
	base, total := layerOffsets(lay.LayerBits())
	if total/8 > opts.MaxKeyBytes {
		return nil, fmt.Errorf("%w: a shard's bitmap needs %d bytes with %d shards, over MaxKeyBytes %d",
			ErrConfig, total/8, shards, opts.MaxKeyBytes)
	}
	s := &Seen{
		c: c, lay: lay, base: base, shards: shards, k: lay.Hashes(), maxBatch: opts.MaxBatch,
		ttl: int64(opts.ResultTTL / time.Second),
	}
	s.params = fmt.Sprintf("%s hash=%s mode=%v layers=%d hashes=%d shards=%d shardbits=%s batch=%d",
		seenLayout, mlbf.HashID, lay.Mode(), lay.Layers(), lay.Hashes(), shards, joinU64(lay.LayerBits()), opts.MaxBatch)
	if growth != nil {
		if s.grow, err = newSeenGrowth(*growth, shards, opts.MaxKeyBytes, !opts.NoLocalBits, fewer); err != nil {
			return nil, err
		}
		s.params += s.grow.params()
	}
	s.salt = st.salt
	if s.salt != 0 {
		s.params += fmt.Sprintf(" salt=%016x", s.salt)
	}
	if st.exact {
		s.buckets = st.buckets
		if s.buckets == 0 {
			s.buckets = exactBuckets(opts, growth, shards)
		}
		s.params += fmt.Sprintf(" exact=%d", s.buckets)
	}
	s.fresh = st.fresh
	s.fp = strconv.FormatUint(fnv64(s.params), 16)
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("redisfrontier: worker id: %w", err)
	}
	s.worker = hex.EncodeToString(id[:])
	s.keys = make([][]string, shards)
	for sh := range s.keys {
		tag := s.tag(sh)
		s.keys[sh] = []string{tag + ":m", "", tag + ":bits"}
	}
	if !opts.NoLocalBits && s.grow == nil {
		s.known = make([][][]uint64, shards)
		for sh := range s.known {
			s.known[sh] = make([][]uint64, lay.Layers()+1)
			for i, b := range lay.LayerBits() {
				s.known[sh][i] = make([]uint64, (b+63)/64)
			}
		}
	}
	return s, nil
}

// exactBuckets returns the exact check's buckets per shard for a new
// seen-set: SeenOptions.ExactURLs (or the filter's first capacity) over
// ExactBucketFill, split over the shards.
func exactBuckets(opts SeenOptions, growth *mlbf.ScalableOptions, shards int) int {
	n := opts.ExactURLs
	switch {
	case n != 0:
	case growth != nil:
		n = growth.ExpectedURLs
	case opts.Filter.ExpectedURLs != 0:
		n = opts.Filter.ExpectedURLs
	default:
		n = mlbf.DefaultExpectedURLs
	}
	total := (n + ExactBucketFill - 1) / ExactBucketFill
	return int(max(1, (total+uint64(shards)-1)/uint64(shards)))
}

// ShardOptions returns the options of one shard of a filter of the given
// options split into shards: every layer divided evenly (rounded up to
// whole 512-bit blocks in improved mode). whole is the layout of opts.
func ShardOptions(opts mlbf.Options, whole *mlbf.Layout, shards int) mlbf.Options {
	o := mlbf.Options{Mode: whole.Mode(), Layers: whole.Layers(), Hashes: whole.Hashes(), Salt: opts.Salt}
	sizes := whole.LayerBits()
	if o.Mode == mlbf.Paper {
		o.BitsPerLayer = (sizes[0] + uint64(shards) - 1) / uint64(shards)
		return o
	}
	o.LayerBits = make([]uint64, len(sizes))
	for i, b := range sizes {
		per := (b + uint64(shards) - 1) / uint64(shards)
		o.LayerBits[i] = (per + 511) / 512 * 512
	}
	return o
}

// layerOffsets lays out layers of the given sizes one after the other in
// one bitmap, each starting on a byte (so that BITCOUNT can count a layer
// by its byte range; improved-mode layers are whole 512-bit blocks anyway),
// and returns the offset of each and the bitmap's size in bits.
func layerOffsets(sizes []uint64) (base []uint64, total uint64) {
	base = make([]uint64, len(sizes))
	for i, b := range sizes {
		base[i] = total
		total += (b + 7) / 8 * 8
	}
	return base, total
}

func (s *Seen) tag(shard int) string {
	return s.c.prefix + "seen:{" + s.c.prefix + "s" + strconv.Itoa(shard) + "}"
}

func (s *Seen) metaKey() string { return s.c.prefix + "seen:meta" }

// exactStatsKey is the hash counting a shard's exact checks (checks) and
// the false positives they caught (caught).
func (s *Seen) exactStatsKey(shard int) string { return s.tag(shard) + ":xs" }

// claim records the parameters (or checks them against those recorded) in
// the meta key and every shard's marker.
func (s *Seen) claim(ctx context.Context) error {
	rdb := s.c.rdb
	var stored string
	err := s.c.retry(ctx, func(ctx context.Context) error {
		if err := rdb.SetNX(ctx, s.metaKey(), s.params, 0).Err(); err != nil {
			return err
		}
		v, err := rdb.Get(ctx, s.metaKey()).Result()
		stored = v
		return err
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: seen-set meta: %w", err)
	}
	if v, _, _ := strings.Cut(stored, " "); v != seenLayout {
		return fmt.Errorf("%w: the seen-set in redis has bit layout %q, this worker reads and writes layout %s "+
			"(finish that crawl with the layercrawl that started it, or use another prefix): %q",
			ErrIncompatible, v, seenLayout, stored)
	}
	if stored != s.params && s.fresh {
		if st, err := parseSeenState(stored); err == nil && (st.salt != s.salt || st.exact != (s.buckets > 0)) {
			return errClaimRace
		}
	}
	if stored != s.params {
		return fmt.Errorf("%w: %s; redis has %q, this worker %q", ErrIncompatible, paramsDiff(stored, s.params), stored, s.params)
	}
	// Markers are created with the meta key; a missing marker later means
	// the data went away (see ErrStateLost). They are set NX here too, so
	// that a crawl opened by an older run keeps working.
	err = s.pipelineRetry(ctx, func(ctx context.Context, p redis.Pipeliner) {
		for sh := range s.keys {
			p.SetNX(ctx, s.keys[sh][0], s.fp, 0)
			if s.grow != nil {
				p.HSetNX(ctx, s.genStateKey(sh), "g", 1)
				p.HSetNX(ctx, s.genStateKey(sh), "n", 0)
			}
		}
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: seen-set markers: %w", err)
	}
	// Allocate every bitmap at its full size once. Grown by the probes
	// instead, a key over 1 MB would keep up to 1 MB of slack (Redis
	// over-allocates a growing string), and how much depends on the order
	// of the writes.
	_, total := layerOffsets(s.lay.LayerBits())
	// EVAL, not EVALSHA: it runs once per shard when a worker starts, and
	// needs no script cache on any Cluster node.
	err = s.pipelineRetry(ctx, func(ctx context.Context, p redis.Pipeliner) {
		for sh := range s.keys {
			allocScript.Eval(ctx, p, s.keys[sh][2:], total-1)
		}
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: seen-set bitmaps: %w", err)
	}
	if s.grow != nil {
		return s.loadGenerations(ctx)
	}
	return nil
}

// pipelineRetry sends the commands fill queues in one pipeline, again
// after a transient failure, and returns the first command's error, if any
// (Pipelined reports it).
func (s *Seen) pipelineRetry(ctx context.Context, fill func(context.Context, redis.Pipeliner)) error {
	return s.c.retry(ctx, func(ctx context.Context) error {
		_, err := s.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			fill(ctx, p)
			return nil
		})
		return err
	})
}

// allocScript creates each absent bitmap key (KEYS) at its full size
// (ARGV: the last bit offset of each); existing keys are left alone, so a
// bit already set is never cleared.
var allocScript = redis.NewScript(`
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then redis.call('SETBIT', KEYS[i], ARGV[i], 0) end
end
return 0
`)

// Salt returns the filter's hash salt, as stored with the seen-set (0:
// unsalted; see SeenOptions.Salted).
func (s *Seen) Salt() uint64 { return s.salt }

// Exact reports whether the seen-set checks the filter's "maybe seen"
// answers exactly (SeenOptions.Exact, as stored with the seen-set).
func (s *Seen) Exact() bool { return s.buckets > 0 }

// ExactStats counts a seen-set's exact checks, over all workers and runs.
type ExactStats struct {
	Checks uint64 `json:"checks"` // "maybe seen" answers of the filter checked
	Caught uint64 `json:"caught"` // of those, new URLs after all: the filter's false positives
}

// ExactStats reads the exact check's counters of every shard (zero for a
// filter-only seen-set).
func (s *Seen) ExactStats(ctx context.Context) (ExactStats, error) {
	if s.buckets == 0 {
		return ExactStats{}, nil
	}
	st, err := readExactStats(ctx, s.c, s.shards)
	if err != nil {
		return st, s.wrapErr(err)
	}
	return st, nil
}

// ReadExactStats reads the exact check's counters of the crawl with the
// client's prefix without opening its seen-set (for crawler status); ok
// is false when the crawl has no seen-set or a filter-only one.
func ReadExactStats(ctx context.Context, c *Client) (st ExactStats, ok bool, err error) {
	params, err := ReadSeenParams(ctx, c)
	if err != nil || params == "" {
		return st, false, err
	}
	state, err := parseSeenState(params)
	if err != nil || !state.exact {
		return st, false, err
	}
	shards := 0
	for _, f := range strings.Fields(params) {
		if v, ok := strings.CutPrefix(f, "shards="); ok {
			shards, err = strconv.Atoi(v)
			if err != nil || shards < 1 {
				return st, false, fmt.Errorf("%w: seen-set parameters: shards=%q", ErrCorrupt, v)
			}
		}
	}
	if shards == 0 {
		return st, false, fmt.Errorf("%w: seen-set parameters without shards: %q", ErrCorrupt, params)
	}
	st, err = readExactStats(ctx, c, shards)
	if err != nil {
		return st, false, fmt.Errorf("redisfrontier: seen-set: %w", err)
	}
	return st, true, nil
}

// readExactStats sums the exact-check counters of the shards.
func readExactStats(ctx context.Context, c *Client, shards int) (ExactStats, error) {
	var st ExactStats
	s := &Seen{c: c} // for the key names
	cmds := make([]*redis.SliceCmd, shards)
	err := c.retry(ctx, func(ctx context.Context) error {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for sh := range cmds {
				cmds[sh] = p.HMGet(ctx, s.exactStatsKey(sh), "checks", "caught")
			}
			return nil
		})
		return err
	})
	if err != nil {
		return st, err
	}
	for sh, cmd := range cmds {
		for i, v := range cmd.Val() {
			if v == nil {
				continue
			}
			str, _ := v.(string)
			n, err := strconv.ParseUint(str, 10, 64)
			if err != nil {
				return st, fmt.Errorf("%w: seen-set shard %d exact-check counter %v", ErrCorrupt, sh, v)
			}
			if i == 0 {
				st.Checks += n
			} else {
				st.Caught += n
			}
		}
	}
	return st, nil
}

// Params returns the filter's parameters as stored in Redis.
func (s *Seen) Params() string { return s.params }

// Shards returns the number of shards.
func (s *Seen) Shards() int { return s.shards }

// Layout returns the layout of one shard: a Seen of N shards holds exactly
// the bits of N mlbf.Filter values made with these options, key u going to
// shard fastrange(route(u), N). With SeenOptions.Growth it is the layout
// of every shard's first generation; a key's route is the same in every
// generation (they share L), so a key stays in its shard as it grows.
func (s *Seen) Layout() *mlbf.Layout { return s.lay }

// Shard returns the shard a key's route selects: the high bits of
// route*shards (Lemire's fastrange), which is uniform for any shard count.
func Shard(route uint64, shards int) int {
	hi, _ := bits.Mul64(route, uint64(shards))
	return int(hi)
}

// TestAndAdd inserts the URL's segments and reports whether they were
// (probably) present before, in one atomic step on the server. Concurrent
// calls are gathered into one round trip: while one call's round trip is
// out, the calls arriving meanwhile queue and the first of them sends them
// all next. A call whose round trip fails gets the error; the frontier
// treats it as fatal for the batch it was building.
func (s *Seen) TestAndAdd(ctx context.Context, seg []string) (bool, error) {
	r := &seenReq{seg: seg, done: make(chan struct{})}
	s.mu.Lock()
	s.pending = append(s.pending, r)
	if s.leading {
		s.mu.Unlock()
		<-r.done
		return r.present, r.err
	}
	s.leading = true
	for {
		batch := s.pending
		s.pending = nil
		if len(batch) == 0 {
			s.leading = false
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		keys := make([][]string, len(batch))
		for i, q := range batch {
			keys[i] = q.seg
		}
		present := make([]bool, len(batch))
		err := s.TestAndAddBatch(ctx, keys, present)
		for i, q := range batch {
			q.present, q.err = present[i], err
			if q != r {
				close(q.done)
			}
		}
		s.mu.Lock()
	}
	return r.present, r.err
}

// TestAndAddBatch is TestAndAdd for every key, writing the answers into
// present[:len(keys)]: one script call per shard touched (at most MaxBatch
// keys each), all sent in one pipeline. Within the batch a repeated key is
// present from its second occurrence on. Transient failures are retried
// with backoff until ctx ends; every script call carries an id, so a call
// retried after its reply was lost returns its first answer.
func (s *Seen) TestAndAddBatch(ctx context.Context, keys [][]string, present []bool) error {
	if len(present) < len(keys) {
		return fmt.Errorf("%w: %d answers for %d keys", ErrConfig, len(present), len(keys))
	}
	return s.testAndAddBatchID(ctx, "", keys, present)
}

// Worker returns the random id of this Seen, which starts every batch id
// it makes and so every lease token of the Frontier using it: the values
// of the frontier's tok hash show which worker holds which host.
func (s *Seen) Worker() string { return s.worker }

// NewBatchID returns a fresh id for TestAndAddBatchID.
func (s *Seen) NewBatchID() string {
	return s.worker + "-" + strconv.FormatUint(s.calls.Add(1), 36)
}

// TestAndAddBatchID is TestAndAddBatch with a caller-chosen batch id (from
// NewBatchID; not empty): calling it again with the same id and keys, from
// any worker of the crawl, within SeenOptions.ResultTTL, returns the first
// answers. It lets another worker finish a dead worker's batch.
func (s *Seen) TestAndAddBatchID(ctx context.Context, id string, keys [][]string, present []bool) error {
	if id == "" {
		return fmt.Errorf("%w: empty batch id", ErrConfig)
	}
	return s.testAndAddBatchID(ctx, id, keys, present)
}

func (s *Seen) testAndAddBatchID(ctx context.Context, id string, keys [][]string, present []bool) error {
	if len(present) < len(keys) {
		return fmt.Errorf("%w: %d answers for %d keys", ErrConfig, len(present), len(keys))
	}
	if s.grow != nil {
		return s.testAndAddGen(ctx, id, keys, present)
	}
	calls := s.prepare(keys, id)
	if err := s.run(ctx, calls); err != nil {
		return err
	}
	for _, cl := range calls {
		for j, i := range cl.idx {
			present[i] = cl.ans[j] == '1'
		}
	}
	return nil
}

// checkAnswers checks a seen-set script reply: one '0' (new) or '1'
// (present) per key of the call, or '2' (new: a false positive the exact
// check caught) when exact.
func checkAnswers(v any, keys int, exact bool) (string, error) {
	ans, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: seen-set script replied %s, want a string", ErrCorrupt, describeReply(v))
	}
	if len(ans) != keys {
		return "", fmt.Errorf("%w: seen-set script answered %d keys for %d", ErrCorrupt, len(ans), keys)
	}
	for i := 0; i < len(ans); i++ {
		if ans[i] != '0' && ans[i] != '1' && (!exact || ans[i] != '2') {
			return "", fmt.Errorf("%w: seen-set script answered %.40q, want only 0 and 1 (and 2 with the exact check)", ErrCorrupt, ans)
		}
	}
	return ans, nil
}

// call is one script call: some keys of one shard.
type call struct {
	shard int
	idx   []int // indexes into the batch's keys
	keys  []string
	args  []any
	ans   string
	done  bool
	mark  []mlbf.Probe // every probe of the call's keys, for learn
}

// callArgs collects the probes a call sends, in seenScript's encoding.
type callArgs struct {
	cnt  []byte              // two bytes per key: how many probes it sends
	lens []byte              // digits of each offset
	offs []byte              // the offsets in decimal, concatenated
	sent map[uint64]struct{} // offsets already in the call
	xl   []byte              // exact check: two bytes per key, the digits of its bucket and fingerprint
	xd   []byte              // exact check: the digits, concatenated
}

// exactArgs returns the exact check's script arguments for a shard:
// bucket key prefix, buckets and fingerprints ("" for all three when the
// seen-set is filter-only).
func (s *Seen) exactArgs(shard int, b *callArgs) []any {
	if s.buckets == 0 {
		return []any{"", "", ""}
	}
	return []any{s.tag(shard) + ":x:", b.xl, b.xd}
}

// addExact appends a key's bucket and fingerprint to b in luaExact's
// encoding.
func (s *Seen) addExact(b *callArgs, seg []string) {
	if s.buckets == 0 {
		return
	}
	fp := Fingerprint(seg)
	n := len(b.xd)
	b.xd = strconv.AppendUint(b.xd, uint64(Shard(fp, s.buckets)), 10)
	bl := len(b.xd) - n
	// Signed: Redis keeps the decimal of an int64 as an integer.
	b.xd = strconv.AppendInt(b.xd, int64(fp), 10)
	b.xl = append(b.xl, byte(bl), byte(len(b.xd)-n-bl))
}

// Fingerprint is the exact check's fingerprint of a key: the first 8 bytes
// of the SHA-256 of its segments joined by '/', which for urlnorm's
// segments is the canonical URL (with Options.IgnoreScheme, the URL
// without its scheme): the fingerprint frontier.Frontier's exact check
// takes. A cryptographic hash, so that a hostile site cannot choose URLs
// whose fingerprints collide with those of pages it wants hidden.
func Fingerprint(seg []string) uint64 {
	h := sha256.New()
	for i, sg := range seg {
		if i > 0 {
			h.Write([]byte{'/'})
		}
		io.WriteString(h, sg)
	}
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0]))
}

// prepare hashes the keys and builds the script calls, at most MaxBatch
// keys each, in key order within each shard. With a batch id the calls are
// named id-0, id-1, ... in a deterministic order; without, each gets a
// fresh id.
func (s *Seen) prepare(keys [][]string, batch string) []*call {
	byShard := make(map[int]*call)
	var calls []*call
	probes := make([]mlbf.Probe, 0, s.lay.MaxProbes())
	bufs := map[*call]*callArgs{}
	nflushed := 0
	flush := func(cl *call) {
		b := bufs[cl]
		cl.args = append([]any{s.fp, s.ttl, len(cl.idx), b.cnt, b.lens, b.offs}, s.exactArgs(cl.shard, b)...)
		var id string
		if batch == "" {
			id = s.NewBatchID()
		} else {
			id = batch + "-" + strconv.Itoa(nflushed)
		}
		nflushed++
		cl.keys = append([]string(nil), s.keys[cl.shard]...)
		cl.keys[1] = s.tag(cl.shard) + ":r:" + id
		cl.keys = append(cl.keys, s.exactStatsKey(cl.shard))
		delete(bufs, cl)
		delete(byShard, cl.shard)
	}
	for i, seg := range keys {
		var route uint64
		probes, route = s.lay.Probes(seg, probes[:0])
		sh := Shard(route, s.shards)
		cl := byShard[sh]
		if cl == nil {
			cl = &call{shard: sh}
			byShard[sh] = cl
			calls = append(calls, cl)
			// Sized for this call's expected share of the keys, so
			// that the slices rarely grow (copying) while filling.
			n := min(s.maxBatch, (len(keys)-i)/s.shards+8)
			cl.idx = make([]int, 0, n)
			if s.known != nil {
				cl.mark = make([]mlbf.Probe, 0, n*s.lay.MaxProbes())
			}
			bufs[cl] = &callArgs{
				cnt:  make([]byte, 0, 2*n),
				lens: make([]byte, 0, n*s.k*2),
				offs: make([]byte, 0, n*s.k*2*8),
				sent: make(map[uint64]struct{}, n*s.k*2),
			}
		}
		b := bufs[cl]
		cl.idx = append(cl.idx, i)
		s.addExact(b, seg)
		sent := 0
		for _, p := range probes {
			if s.known != nil {
				cl.mark = append(cl.mark, p)
				if s.isKnown(sh, p) {
					continue
				}
			}
			off := s.base[p.Layer] + p.Bit
			if _, dup := b.sent[off]; dup {
				continue
			}
			b.sent[off] = struct{}{}
			n := len(b.offs)
			b.offs = strconv.AppendUint(b.offs, off, 10)
			b.lens = append(b.lens, byte(len(b.offs)-n))
			sent++
		}
		b.cnt = append(b.cnt, byte(sent>>8), byte(sent))
		if len(cl.idx) == s.maxBatch {
			flush(cl)
		}
	}
	for _, cl := range calls {
		if _, open := bufs[cl]; open {
			// In call order, so that ids are deterministic.
			flush(cl)
		}
	}
	return calls
}

// isKnown reports whether the worker has seen bit p of shard sh set.
func (s *Seen) isKnown(sh int, p mlbf.Probe) bool {
	w := &s.known[sh][p.Layer][p.Bit>>6]
	return atomic.LoadUint64(w)&(1<<(p.Bit&63)) != 0
}

// learn records that the probes of a completed call are set in Redis.
func (s *Seen) learn(cl *call) {
	if s.known == nil {
		return
	}
	for _, p := range cl.mark {
		atomic.OrUint64(&s.known[cl.shard][p.Layer][p.Bit>>6], 1<<(p.Bit&63))
	}
}

// run sends the calls not done yet in one pipeline, retrying transient failures.
func (s *Seen) run(ctx context.Context, calls []*call) error {
	rdb := s.c.rdb
	err := s.c.retry(ctx, func(ctx context.Context) error {
		var todo []*call
		for _, cl := range calls {
			if !cl.done {
				todo = append(todo, cl)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		cmds := make([]*redis.Cmd, len(todo))
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, cl := range todo {
				cmds[j] = seenScript.EvalSha(ctx, p, cl.keys, cl.args...)
			}
			return nil
		})
		var first error
		for j, cl := range todo {
			cmd := cmds[j]
			if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
				// Redis lost its script cache (a restart): EVAL runs
				// the call and loads the script for the next ones.
				cmd = seenScript.Eval(ctx, rdb, cl.keys, cl.args...)
			}
			v, err := cmd.Result()
			if err == nil {
				cl.ans, err = checkAnswers(v, len(cl.idx), s.buckets > 0)
			}
			if err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			cl.done = true
			s.learn(cl)
		}
		return first
	})
	if err != nil {
		return s.wrapErr(err)
	}
	return nil
}

// wrapErr maps the script's error replies to the package's sentinels.
func (s *Seen) wrapErr(err error) error {
	switch {
	case redis.HasErrorPrefix(err, "LCLOST"):
		return fmt.Errorf("%w: seen-set shard marker missing: %w", ErrStateLost, err)
	case redis.HasErrorPrefix(err, "LCPARAMS"):
		return fmt.Errorf("%w: %w", ErrIncompatible, err)
	case errors.Is(err, ErrCorrupt):
		return err
	}
	return fmt.Errorf("redisfrontier: seen-set: %w", err)
}

// Fill reports, per layer, the fraction of bits set over all shards
// (BITCOUNT of every bitmap key: O(size), meant for status displays).
// With SeenOptions.Growth it reports each shard's newest generation, the
// one taking inserts (the older ones are full by design); Growth reports
// every generation.
func (s *Seen) Fill(ctx context.Context) ([]float64, error) {
	if s.grow != nil {
		return s.fillNewest(ctx)
	}
	L := s.lay.Layers()
	sizes := s.lay.LayerBits()
	out := make([]float64, L+1)
	var cmds []*redis.IntCmd
	err := s.c.retry(ctx, func(ctx context.Context) error {
		cmds = cmds[:0]
		_, err := s.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for sh := range s.keys {
				for i, b := range sizes {
					// Byte ranges (the default unit, so Redis 6 works too).
					cmds = append(cmds, p.BitCount(ctx, s.keys[sh][2], &redis.BitCount{
						Start: int64(s.base[i] / 8), End: int64((s.base[i]+b+7)/8 - 1)}))
				}
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, s.wrapErr(err)
	}
	for j, c := range cmds {
		out[j%(L+1)] += float64(c.Val())
	}
	for i := range out {
		out[i] /= float64(sizes[i]) * float64(s.shards)
	}
	return out, nil
}

// Delete removes the seen-set's keys (meta, markers, bitmaps; with
// Growth, every generation's bitmap and the generation counters) from
// Redis. Result keys expire by themselves.
func (s *Seen) Delete(ctx context.Context) error {
	var all []string
	for sh, ks := range s.keys {
		all = append(all, ks[0])
		all = append(all, ks[2:]...)
		if s.buckets > 0 {
			all = append(all, s.exactStatsKey(sh))
			for b := 0; b < s.buckets; b++ {
				all = append(all, s.tag(sh)+":x:"+strconv.Itoa(b))
			}
		}
		if s.grow != nil {
			all = append(all, s.genStateKey(sh))
			for i := 1; i < len(s.grow.gens); i++ {
				all = append(all, s.genKey(sh, i))
			}
		}
	}
	err := s.c.retry(ctx, func(ctx context.Context) error {
		_, err := s.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range all {
				p.Del(ctx, k)
			}
			p.Del(ctx, s.metaKey())
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: delete seen-set: %w", err)
	}
	return nil
}

func joinU64(v []uint64) string {
	var b strings.Builder
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(x, 10))
	}
	return b.String()
}

// fnv64 is FNV-1a: a short fingerprint of the parameters for the markers.
func fnv64(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return h
}

// ReadSeenParams returns the parameters stored with the crawl's seen-set,
// or "" when there is none (for crawler status).
func ReadSeenParams(ctx context.Context, c *Client) (string, error) {
	var v string
	err := c.retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = c.rdb.Get(ctx, c.prefix+"seen:meta").Result()
		if err == redis.Nil {
			v, err = "", nil
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("redisfrontier: read seen-set parameters: %w", err)
	}
	return v, nil
}
