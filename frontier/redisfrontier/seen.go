package redisfrontier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
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
	// MaxKeyBytes bounds the size of one bitmap key; default 128 MiB (a
	// Redis string holds at most 512 MiB).
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
	NoLocalBits bool
}

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
	shards   int
	k        int
	maxBatch int
	ttl      int64  // seconds
	fp       string // parameter fingerprint, stored in every shard marker
	params   string // human-readable parameters, in the meta key
	keys     [][]string
	worker   string // random id naming this process's script calls
	calls    atomic.Uint64
	// known[shard][layer] holds the bits this worker has seen set in
	// Redis (read and set atomically); nil with NoLocalBits.
	known [][][]uint64

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

// seenScript checks and inserts a batch of keys of one shard atomically.
//
// KEYS: marker, result, layer 0 .. layer L of the shard.
// ARGV: fingerprint, result TTL (s), m (keys in the call), then for each
// layer i = 0..L: the number t of probes sent, t bit offsets in key order,
// and a string of m bytes whose j-th byte is 48 ('0') plus the number of
// those probes that belong to key j. Probes the worker knows to be set
// already are not sent (bits only go from 0 to 1).
//
// BITFIELD SET returns each bit's old value, so one call per layer tests
// and sets all its probes; keys are handled in order, so a key repeated in
// the batch is present from its second occurrence on, exactly as if the
// keys had been inserted one by one. The answer (one '0'/'1' per key: '1'
// when every probe sent for it was set) is kept under the result key for
// the TTL: a retry of the same call returns it unchanged.
//
// One argument per probe (its offset): the probes' keys come from the
// per-layer count string rather than from an index argument per probe.
// That halves the arguments sent, though it did not measurably change
// Redis's CPU per URL, which the BITFIELD operations dominate (see
// BenchmarkBitPrimitives and docs/BENCHMARKS.md).
var seenScript = redis.NewScript(`
local mark = redis.call('GET', KEYS[1])
if not mark then return redis.error_reply('LCLOST seen-set shard marker missing') end
if mark ~= ARGV[1] then return redis.error_reply('LCPARAMS seen-set parameters differ') end
local prev = redis.call('GET', KEYS[2])
if prev then return prev end
local byte = string.byte
local m = tonumber(ARGV[3])
local present = {}
for u = 1, m do present[u] = 1 end
local args = {}
local pos = 4
for i = 3, #KEYS do
  local t = tonumber(ARGV[pos])
  local cnt = ARGV[pos + t + 1]
  local key, left = 0, 0
  local done = 0
  while done < t do
    local chunk = t - done
    if chunk > 1500 then chunk = 1500 end
    local base = pos + done
    local a = 0
    for q = 1, chunk do
      args[a + 1] = 'SET'; args[a + 2] = 'u1'; args[a + 3] = ARGV[base + q]; args[a + 4] = '1'
      a = a + 4
    end
    local r = redis.call('BITFIELD', KEYS[i], unpack(args, 1, a))
    for q = 1, chunk do
      while left == 0 do
        key = key + 1
        left = byte(cnt, key) - 48
      end
      if r[q] == 0 then present[key] = 0 end
      left = left - 1
    end
    done = done + chunk
  end
  pos = pos + t + 2
end
local out = table.concat(present)
redis.call('SET', KEYS[2], out, 'EX', ARGV[2])
return out
`)

// OpenSeen opens the crawl's seen-set in Redis, creating it when absent.
// It fails with an error wrapping ErrIncompatible when the filter in Redis
// was made with other parameters (mode, layers, hashes, layer sizes, shards
// or mlbf.HashID), so that workers of one crawl can never disagree on where
// a URL's bits are.
func OpenSeen(ctx context.Context, c *Client, opts SeenOptions) (*Seen, error) {
	opts.ensureDefaults()
	if opts.MaxBatch < 1 || opts.Shards < 0 || opts.ResultTTL < time.Second {
		return nil, fmt.Errorf("%w: seen-set batch %d, shards %d, result TTL %v", ErrConfig, opts.MaxBatch, opts.Shards, opts.ResultTTL)
	}
	whole, err := mlbf.NewLayout(opts.Filter)
	if err != nil {
		return nil, fmt.Errorf("redisfrontier: seen-set: %w", err)
	}
	shards := opts.Shards
	if shards == 0 {
		shards = 1
		if _, ok := c.rdb.(*redis.ClusterClient); ok {
			shards = 16
		}
		for _, b := range whole.LayerBits() {
			need := int((b/8 + opts.MaxKeyBytes - 1) / opts.MaxKeyBytes)
			shards = max(shards, need)
		}
	}
	lay, err := mlbf.NewLayout(ShardOptions(opts.Filter, whole, shards))
	if err != nil {
		return nil, fmt.Errorf("redisfrontier: seen-set shard: %w", err)
	}
	for i, b := range lay.LayerBits() {
		if b/8 > opts.MaxKeyBytes {
			return nil, fmt.Errorf("%w: layer %d needs %d bytes per key with %d shards, over MaxKeyBytes %d",
				ErrConfig, i, b/8, shards, opts.MaxKeyBytes)
		}
	}
	s := &Seen{
		c: c, lay: lay, shards: shards, k: lay.Hashes(), maxBatch: opts.MaxBatch,
		ttl: int64(opts.ResultTTL / time.Second),
	}
	s.params = fmt.Sprintf("v1 hash=%s mode=%v layers=%d hashes=%d shards=%d shardbits=%s batch=%d",
		mlbf.HashID, lay.Mode(), lay.Layers(), lay.Hashes(), shards, joinU64(lay.LayerBits()), opts.MaxBatch)
	s.fp = strconv.FormatUint(fnv64(s.params), 16)
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("redisfrontier: worker id: %w", err)
	}
	s.worker = hex.EncodeToString(id[:])
	s.keys = make([][]string, shards)
	for sh := range s.keys {
		tag := s.tag(sh)
		ks := []string{tag + ":m", ""}
		for i := 0; i <= lay.Layers(); i++ {
			ks = append(ks, tag+":"+strconv.Itoa(i))
		}
		s.keys[sh] = ks
	}
	if !opts.NoLocalBits {
		s.known = make([][][]uint64, shards)
		for sh := range s.known {
			s.known[sh] = make([][]uint64, lay.Layers()+1)
			for i, b := range lay.LayerBits() {
				s.known[sh][i] = make([]uint64, (b+63)/64)
			}
		}
	}
	if err := s.claim(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ShardOptions returns the options of one shard of a filter of the given
// options split into shards: every layer divided evenly (rounded up to
// whole 512-bit blocks in improved mode). whole is the layout of opts.
func ShardOptions(opts mlbf.Options, whole *mlbf.Layout, shards int) mlbf.Options {
	o := mlbf.Options{Mode: whole.Mode(), Layers: whole.Layers(), Hashes: whole.Hashes()}
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

func (s *Seen) tag(shard int) string {
	return s.c.prefix + "seen:{" + s.c.prefix + "s" + strconv.Itoa(shard) + "}"
}

func (s *Seen) metaKey() string { return s.c.prefix + "seen:meta" }

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
	if stored != s.params {
		return fmt.Errorf("%w: redis has %q, this worker %q", ErrIncompatible, stored, s.params)
	}
	// Markers are created with the meta key; a missing marker later means
	// the data went away (see ErrStateLost). They are set NX here too, so
	// that a crawl opened by an older run keeps working.
	err = s.pipelineRetry(ctx, func(ctx context.Context, p redis.Pipeliner) {
		for sh := range s.keys {
			p.SetNX(ctx, s.keys[sh][0], s.fp, 0)
		}
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: seen-set markers: %w", err)
	}
	// Allocate every bitmap at its full size once. Grown by the probes
	// instead, a key over 1 MB would keep up to 1 MB of slack (Redis
	// over-allocates a growing string), and how much depends on the order
	// of the writes.
	sizes := make([]any, 0, len(s.lay.LayerBits()))
	for _, b := range s.lay.LayerBits() {
		sizes = append(sizes, b-1)
	}
	// EVAL, not EVALSHA: it runs once per shard when a worker starts, and
	// needs no script cache on any Cluster node.
	err = s.pipelineRetry(ctx, func(ctx context.Context, p redis.Pipeliner) {
		for sh := range s.keys {
			allocScript.Eval(ctx, p, s.keys[sh][2:], sizes...)
		}
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: seen-set bitmaps: %w", err)
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

// Params returns the filter's parameters as stored in Redis.
func (s *Seen) Params() string { return s.params }

// Shards returns the number of shards.
func (s *Seen) Shards() int { return s.shards }

// Layout returns the layout of one shard: a Seen of N shards holds exactly
// the bits of N mlbf.Filter values made with these options, key u going to
// shard fastrange(route(u), N).
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
	calls := s.prepare(keys, id)
	if err := s.run(ctx, calls); err != nil {
		return err
	}
	for _, cl := range calls {
		if len(cl.ans) != len(cl.idx) {
			return fmt.Errorf("redisfrontier: seen-set: script answered %d keys for %d", len(cl.ans), len(cl.idx))
		}
		for j, i := range cl.idx {
			present[i] = cl.ans[j] == '1'
		}
	}
	return nil
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

// prepare hashes the keys and builds the script calls, at most MaxBatch
// keys each, in key order within each shard. With a batch id the calls are
// named id-0, id-1, ... in a deterministic order; without, each gets a
// fresh id.
func (s *Seen) prepare(keys [][]string, batch string) []*call {
	byShard := make(map[int]*call)
	var calls []*call
	probes := make([]mlbf.Probe, 0, s.lay.MaxProbes())
	L := s.lay.Layers()
	// offs[i] and cnt[i] collect the probes of layer i sent in a call.
	type shardBuf struct {
		offs [][]uint64
		cnt  [][]byte // cnt[i][j]: 48 + probes of key j sent in layer i
	}
	bufs := map[*call]*shardBuf{}
	nflushed := 0
	flush := func(cl *call) {
		b := bufs[cl]
		n := 3 + 2*(L+1)
		for _, o := range b.offs {
			n += len(o)
		}
		args := make([]any, 0, n)
		args = append(args, s.fp, s.ttl, len(cl.idx))
		for i := range b.offs {
			args = append(args, len(b.offs[i]))
			// Pointers into offs, which is final now: boxing a
			// pointer does not allocate, a uint64 would.
			for j := range b.offs[i] {
				args = append(args, &b.offs[i][j])
			}
			args = append(args, b.cnt[i])
		}
		cl.args = args
		var id string
		if batch == "" {
			id = s.NewBatchID()
		} else {
			id = batch + "-" + strconv.Itoa(nflushed)
		}
		nflushed++
		cl.keys = append([]string(nil), s.keys[cl.shard]...)
		cl.keys[1] = s.tag(cl.shard) + ":r:" + id
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
			b := &shardBuf{offs: make([][]uint64, L+1), cnt: make([][]byte, L+1)}
			// Sized for this call's expected share of the keys, so
			// that the slices rarely grow (copying) while filling.
			n := min(s.maxBatch, (len(keys)-i)/s.shards+8)
			cl.idx = make([]int, 0, n)
			if s.known != nil {
				cl.mark = make([]mlbf.Probe, 0, n*s.lay.MaxProbes())
			}
			for l := range b.offs {
				b.offs[l] = make([]uint64, 0, n*s.k)
				b.cnt[l] = make([]byte, 0, n)
			}
			bufs[cl] = b
		}
		b := bufs[cl]
		cl.idx = append(cl.idx, i)
		for l := range b.cnt {
			b.cnt[l] = append(b.cnt[l], '0')
		}
		last := len(cl.idx) - 1
		for _, p := range probes {
			if s.known != nil {
				cl.mark = append(cl.mark, p)
				if s.isKnown(sh, p) {
					continue
				}
			}
			b.offs[p.Layer] = append(b.offs[p.Layer], p.Bit)
			b.cnt[p.Layer][last]++
		}
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
			ans, err := cmd.Text()
			if err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			cl.ans, cl.done = ans, true
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
	}
	return fmt.Errorf("redisfrontier: seen-set: %w", err)
}

// Fill reports, per layer, the fraction of bits set over all shards
// (BITCOUNT of every bitmap key: O(size), meant for status displays).
func (s *Seen) Fill(ctx context.Context) ([]float64, error) {
	L := s.lay.Layers()
	sizes := s.lay.LayerBits()
	out := make([]float64, L+1)
	var cmds []*redis.IntCmd
	err := s.c.retry(ctx, func(ctx context.Context) error {
		cmds = cmds[:0]
		_, err := s.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for sh := range s.keys {
				for i := 0; i <= L; i++ {
					cmds = append(cmds, p.BitCount(ctx, s.keys[sh][2+i], nil))
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

// Delete removes the seen-set's keys (meta, markers, bitmaps) from Redis.
// Result keys expire by themselves.
func (s *Seen) Delete(ctx context.Context) error {
	var all []string
	for _, ks := range s.keys {
		all = append(all, ks[0])
		all = append(all, ks[2:]...)
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
