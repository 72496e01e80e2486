package redisfrontier

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/mlbf"
)

// A growing seen-set (SeenOptions.Growth) keeps, per shard, a sequence of
// generations under the shard's hash tag:
//
//	{tag}:bits      generation 0 (the fixed filter's key)
//	{tag}:bits:<i>  generation i >= 1, created by the script that adds it
//	{tag}:g         hash: g = the shard's generation count, n = the keys its
//	                newest generation has reported new
//
// Inserts go to the newest generation, by a script like the fixed one
// that also counts the keys it reports new and, when the count reaches the
// generation's per-shard capacity, adds the next generation (and stops
// there: the call's remaining keys are sent again, for the new one). Old
// generations never change again, so each worker downloads them once
// (GETRANGE) and tests them itself: a key present in an old generation is
// sent with no probes, which the script answers present without touching
// the newest generation.
//
// The worker sends its idea of the shard's generation count with every
// call; a script that finds the shard grown past it changes nothing and
// replies "stale" with the current count, and the worker downloads the
// generations that became old and sends the call again. So every key a
// script tests was first tested by its worker against every old
// generation of the shard as it is when the script runs: of any number of
// concurrent checks of a new key exactly one reports it new, across a
// growth too.

// seenGrowth is the geometry and the local state of a growing seen-set.
type seenGrowth struct {
	opts  mlbf.ScalableOptions // defaults applied
	gens  []genGeom            // of each generation a shard may have
	local bool                 // keep the bits known set in the newest generations
	sig   string               // fingerprint of every generation's geometry
	// shards[sh] is what this worker knows of shard sh's generations.
	shards []*shardGens
	// oldCounts memoizes the set bits per layer of old generations,
	// keyed by shard and generation, for Growth: they never change, so
	// each is counted in Redis once, not at every status read.
	countsMu  sync.Mutex
	oldCounts map[[2]int][]int64
}

// genGeom is the geometry of one generation in one shard.
type genGeom struct {
	lay   *mlbf.Layout
	base  []uint64 // bit offset of each layer in the generation's bitmap
	total uint64   // bits of the bitmap
	cap   uint64   // keys the generation reports new in one shard before the next is added
}

// shardGens is what a worker knows of one shard's generations.
type shardGens struct {
	mu sync.Mutex // protects g and words (whose slices are replaced, never changed in place)
	g  int        // generations the shard has, as last seen in Redis; 0 before the first look
	// words[i][layer]: for i < g-1 every bit of generation i (downloaded
	// once: it no longer changes); for i = g-1 the bits this worker has
	// seen set (updated atomically; nil without local bits).
	words [][][]uint64
}

// growthOptions checks that Filter leaves the sizing to Growth and returns
// Growth with the defaults applied.
func growthOptions(filter mlbf.Options, g mlbf.ScalableOptions) (mlbf.ScalableOptions, error) {
	switch {
	case filter.Mode != mlbf.Improved:
		return g, fmt.Errorf("%w: seen-set growth: generations are improved-mode filters, Filter.Mode is %v", ErrConfig, filter.Mode)
	case filter.Hashes != 0 || len(filter.LayerBits) != 0 || filter.BitsPerLayer != 0 || filter.ExpectedURLs != 0 ||
		filter.FalsePositiveRate != 0 || filter.ExpectedSegments != nil || filter.LayerFalsePositiveRate != 0:
		return g, fmt.Errorf("%w: seen-set growth: Growth sizes the generations; Filter may set only Layers", ErrConfig)
	case g.Layers != 0 && filter.Layers != 0 && g.Layers != filter.Layers:
		return g, fmt.Errorf("%w: seen-set growth: Growth.Layers %d and Filter.Layers %d differ", ErrConfig, g.Layers, filter.Layers)
	}
	if g.Layers == 0 {
		g.Layers = filter.Layers
	}
	// mlbf's defaults, spelled out because the parameters stored in Redis
	// name them; the geometry fingerprint catches any drift anyway.
	if g.Layers == 0 {
		g.Layers = mlbf.DefaultLayers
	}
	if g.ExpectedURLs == 0 {
		g.ExpectedURLs = mlbf.DefaultExpectedURLs
	}
	if g.FalsePositiveRate == 0 {
		g.FalsePositiveRate = mlbf.DefaultFalsePositiveRate
	}
	if g.Growth == 0 {
		g.Growth = 2
	}
	if g.Tightening == 0 {
		g.Tightening = 0.5
	}
	if _, err := g.Generation(0); err != nil {
		return g, fmt.Errorf("%w: seen-set growth: %w", ErrConfig, err)
	}
	return g, nil
}

// newSeenGrowth computes the geometry of every generation a shard may
// have: up to mlbf.MaxGenerations, and no more than the first whose bitmap
// would exceed maxKeyBytes (a shard that reaches the last keeps inserting
// into it, its rate climbing past its share: see GrowthStats.Saturated).
func newSeenGrowth(o mlbf.ScalableOptions, shards int, maxKeyBytes uint64, local, fewer bool) (*seenGrowth, error) {
	gr := &seenGrowth{opts: o, local: local, shards: make([]*shardGens, shards)}
	var sig strings.Builder
	for i := 0; i < mlbf.MaxGenerations; i++ {
		opts, err := o.Generation(i)
		if err != nil {
			return nil, fmt.Errorf("%w: seen-set generation %d: %w", ErrConfig, i, err)
		}
		if fewer {
			opts = fitSizing(opts, shards, maxKeyBytes)
		}
		if float64(o.ExpectedURLs)*math.Pow(float64(o.Growth), float64(i)) > 1<<62 {
			break // capacities past any crawl, and past uint64 soon
		}
		whole, err := mlbf.NewLayout(opts)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("redisfrontier: seen-set: %w", err)
			}
			break // a layer past mlbf.MaxBits
		}
		lay, err := mlbf.NewLayout(ShardOptions(opts, whole, shards))
		if err != nil {
			return nil, fmt.Errorf("redisfrontier: seen-set shard: %w", err)
		}
		base, total := layerOffsets(lay.LayerBits())
		if total/8 > maxKeyBytes {
			if i == 0 {
				return nil, fmt.Errorf("%w: a shard's bitmap needs %d bytes with %d shards, over MaxKeyBytes %d",
					ErrConfig, total/8, shards, maxKeyBytes)
			}
			break
		}
		capacity := (opts.ExpectedURLs + uint64(shards) - 1) / uint64(shards)
		gr.gens = append(gr.gens, genGeom{lay: lay, base: base, total: total, cap: capacity})
		fmt.Fprintf(&sig, "%d:%d:%s;", capacity, lay.Hashes(), joinU64(lay.LayerBits()))
	}
	gr.sig = strconv.FormatUint(fnv64(sig.String()), 16)
	for sh := range gr.shards {
		gr.shards[sh] = &shardGens{}
	}
	return gr, nil
}

// params returns the growth parameters for the meta key: workers of one
// crawl must agree on every generation's geometry and on where growth
// stops.
func (gr *seenGrowth) params() string {
	return fmt.Sprintf(" growth=%d tightening=%g first=%d target=%g gens=%d gensig=%s",
		gr.opts.Growth, gr.opts.Tightening, gr.opts.ExpectedURLs, gr.opts.FalsePositiveRate, len(gr.gens), gr.sig)
}

// paramsDiff names the fields in which two parameter strings differ, for
// ErrIncompatible's message: "growth: redis 2, this worker none".
func paramsDiff(stored, mine string) string {
	fields := func(p string) (map[string]string, []string) {
		m := map[string]string{}
		var order []string
		for _, f := range strings.Fields(p) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				k, v = "layout", f
			}
			m[k] = v
			order = append(order, k)
		}
		return m, order
	}
	a, ao := fields(stored)
	b, bo := fields(mine)
	var diffs []string
	seen := map[string]bool{}
	for _, k := range append(ao, bo...) {
		if seen[k] || a[k] == b[k] {
			continue
		}
		seen[k] = true
		av, bv := a[k], b[k]
		if av == "" {
			av = "none"
		}
		if bv == "" {
			bv = "none"
		}
		diffs = append(diffs, fmt.Sprintf("%s: redis %s, this worker %s", k, av, bv))
	}
	if len(diffs) == 0 {
		return "parameters differ"
	}
	if _, ok := a["growth"]; ok != (b["growth"] != "") {
		if ok {
			diffs = append([]string{"the seen-set in redis grows (SeenOptions.Growth), this worker's does not"}, diffs...)
		} else {
			diffs = append([]string{"this worker's seen-set grows (SeenOptions.Growth), the one in redis does not"}, diffs...)
		}
	}
	return strings.Join(diffs, "; ")
}

// genKey is the bitmap key of generation i of a shard.
func (s *Seen) genKey(shard, i int) string {
	if i == 0 {
		return s.tag(shard) + ":bits"
	}
	return s.tag(shard) + ":bits:" + strconv.Itoa(i)
}

// genStateKey is the hash holding a shard's generation count (g) and the
// keys its newest generation reported new (n).
func (s *Seen) genStateKey(shard int) string { return s.tag(shard) + ":g" }

// loadGenerations reads every shard's generation count and downloads its
// old generations.
func (s *Seen) loadGenerations(ctx context.Context) error {
	cmds := make([]*redis.StringCmd, s.shards)
	err := s.pipelineRetry(ctx, func(ctx context.Context, p redis.Pipeliner) {
		for sh := range cmds {
			cmds[sh] = p.HGet(ctx, s.genStateKey(sh), "g")
		}
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: seen-set generations: %w", err)
	}
	for sh, cmd := range cmds {
		g, err := strconv.Atoi(cmd.Val())
		if err != nil {
			return fmt.Errorf("%w: seen-set shard %d generation count %q", ErrCorrupt, sh, cmd.Val())
		}
		if err := s.refreshShard(ctx, sh, g); err != nil {
			return err
		}
	}
	return nil
}

// view returns what the worker knows of a shard: its generation count and
// the generations' words (see shardGens).
func (s *Seen) view(sh int) (int, [][][]uint64) {
	st := s.grow.shards[sh]
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.g, st.words
}

// refreshShard brings the worker's view of a shard to g generations (a
// count read from Redis): it downloads the generations that became old.
// Concurrent refreshes of one shard wait for each other.
func (s *Seen) refreshShard(ctx context.Context, sh, g int) error {
	st := s.grow.shards[sh]
	st.mu.Lock()
	defer st.mu.Unlock()
	if g <= st.g {
		return nil
	}
	if g > len(s.grow.gens) {
		return fmt.Errorf("%w: seen-set shard %d has %d generations, this worker allows %d", ErrCorrupt, sh, g, len(s.grow.gens))
	}
	words := make([][][]uint64, g)
	copy(words, st.words)
	for i := max(st.g-1, 0); i < g-1; i++ {
		w, err := s.download(ctx, sh, i)
		if err != nil {
			return err
		}
		words[i] = w
	}
	words[g-1] = nil
	if s.grow.local {
		words[g-1] = newWords(s.grow.gens[g-1].lay)
	}
	st.g, st.words = g, words
	return nil
}

func newWords(lay *mlbf.Layout) [][]uint64 {
	w := make([][]uint64, lay.Layers()+1)
	for i, b := range lay.LayerBits() {
		w[i] = make([]uint64, (b+63)/64)
	}
	return w
}

// downloadChunk is the most bytes one GETRANGE of a download reads, so
// that no reply holds Redis or its output buffer for long.
const downloadChunk = 4 << 20

// download reads generation i of a shard, which no longer changes, into
// words per layer.
func (s *Seen) download(ctx context.Context, sh, i int) ([][]uint64, error) {
	geo := s.grow.gens[i]
	key := s.genKey(sh, i)
	size := int64(geo.total / 8)
	buf := make([]byte, 0, size)
	for off := int64(0); off < size; off += downloadChunk {
		end := min(off+downloadChunk, size) - 1
		var b []byte
		err := s.c.retry(ctx, func(ctx context.Context) error {
			var err error
			b, err = s.c.rdb.GetRange(ctx, key, off, end).Bytes()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("redisfrontier: seen-set generation %d of shard %d: %w", i, sh, err)
		}
		if int64(len(b)) != end-off+1 {
			return nil, fmt.Errorf("%w: seen-set generation %d of shard %d: %s holds %d bytes from %d, want %d",
				ErrStateLost, i, sh, key, len(b), off, end-off+1)
		}
		buf = append(buf, b...)
	}
	w := newWords(geo.lay)
	for l, words := range w {
		// Improved-mode layers are whole 512-bit blocks, so every layer
		// starts on a word. Redis numbers a byte's bits from the most
		// significant; mlbf's words from the least.
		at := geo.base[l] / 8
		for j := range words {
			var x uint64
			for k := uint64(0); k < 8; k++ {
				x |= uint64(bits.Reverse8(buf[at+uint64(j)*8+k])) << (8 * k)
			}
			words[j] = x
		}
	}
	return w, nil
}

// wordsHave reports whether every probe is set in words.
func wordsHave(words [][]uint64, probes []mlbf.Probe) bool {
	for _, p := range probes {
		if !hasBit(words, p) {
			return false
		}
	}
	return true
}

func hasBit(words [][]uint64, p mlbf.Probe) bool {
	return atomic.LoadUint64(&words[p.Layer][p.Bit>>6])&(1<<(p.Bit&63)) != 0
}

// seenGenScript is seenScript for a growing filter: it checks and inserts
// a batch of keys of one shard into the shard's newest generation.
//
// KEYS: marker, result, the shard's generation state (hash: g, n), the
// newest generation's bitmap, the next generation's bitmap, the shard's
// exact-check counters.
// ARGV: fingerprint, result TTL (s), m (keys in the call), the worker's
// generation count, the newest generation's per-shard capacity, the last
// bit offset of the next generation's bitmap (-1: the newest may not
// grow), then the probes as for seenScript (of the newest generation),
// then the exact check's arguments as for seenScript (luaExact), which
// runs over the keys answered.
//
// A stored answer is returned first, whatever the generations are now: a
// retried or replayed call gets its first answer. Then, if the shard has
// another generation count than the worker's, nothing changes and the
// reply is "S<count>" (stale). Otherwise the keys are processed in order
// as by seenScript, n counting those reported new; when n reaches the
// capacity, the next generation is added (its bitmap allocated at its full
// size, g+1, n=0) and the call stops after that key. The reply, stored for
// the TTL, is "A<g>,<g'>:<answers>": g the generation count the answers
// were computed with (the keys went into generation g-1), g' the count
// after the call, one '0'/'1' per key answered: fewer than m when the call
// stopped at a growth. Keys are processed in chunks of at most
// capacity-n, so no probe of a key after the stop is ever sent.
var seenGenScript = redis.NewScript(`
local call = redis.call
local mark = call('GET', KEYS[1])
if not mark then return redis.error_reply('LCLOST seen-set shard marker missing') end
if mark ~= ARGV[1] then return redis.error_reply('LCPARAMS seen-set parameters differ') end
local prev = call('GET', KEYS[2])
if prev then return prev end
local st = call('HMGET', KEYS[3], 'g', 'n')
if not st[1] or not st[2] then return redis.error_reply('LCLOST seen-set shard generations missing') end
local g, fresh = tonumber(st[1]), tonumber(st[2])
if g ~= tonumber(ARGV[4]) then return 'S' .. g end
local cap, nextLast = tonumber(ARGV[5]), tonumber(ARGV[6])
local byte, sub = string.byte, string.sub
local bits = KEYS[4]
local m = tonumber(ARGV[3])
local cnt, lens, offs = ARGV[7], ARGV[8], ARGV[9]
if #cnt ~= 2 * m then return redis.error_reply('LCARGS seen-set call: counts for ' .. (#cnt / 2) .. ' keys, want ' .. m) end
local xp, xl = ARGV[10], ARGV[11]
if xp ~= '' and #xl ~= 2 * m then return redis.error_reply('LCARGS seen-set call: fingerprints for ' .. (#xl / 2) .. ' keys, want ' .. m) end
local n = #lens
local out = {}
-- ki is the key whose probes come next, left how many of them are left,
-- ans its answer so far; fresh counts the keys answered new.
local ki, left, ans = 0, 0, '1'
local function fold(r, c)
  for i = 1, c do
    while left == 0 do
      ki = ki + 1
      local hi, lo = byte(cnt, 2 * ki - 1, 2 * ki)
      left = hi * 256 + lo
      ans = '1'
      if left == 0 then out[ki] = '1' end
    end
    if r[i] == 0 then ans = '0' end
    left = left - 1
    if left == 0 then
      out[ki] = ans
      if ans == '0' then fresh = fresh + 1 end
    end
  end
end
` + luaSetProbes + luaExact + `-- The keys go in chunks of at most capacity-n (all of them while the
-- newest may not grow), so that the count can reach the capacity only at
-- a chunk's last key.
local at, grew = g, false
while ki < m do
  local upto = m
  if nextLast >= 0 then upto = math.min(m, ki + math.max(cap - fresh, 1)) end
  local c = 0
  for i = ki + 1, upto do
    local hi, lo = byte(cnt, 2 * i - 1, 2 * i)
    c = c + hi * 256 + lo
  end
  if q + c - 1 > n then return redis.error_reply('LCARGS seen-set call: probe counts and offsets do not add up') end
  set(c)
  -- Keys without probes at the chunk's end.
  while ki < upto do
    ki = ki + 1
    out[ki] = '1'
  end
  if nextLast >= 0 and fresh >= cap then
    g = g + 1
    fresh = 0
    if call('EXISTS', KEYS[5]) == 0 then call('SETBIT', KEYS[5], ARGV[6], 0) end
    grew = true
    break
  end
end
if pos > #offs + 1 or (not grew and (q ~= n + 1 or pos ~= #offs + 1)) then
  return redis.error_reply('LCARGS seen-set call: probe counts and offsets do not add up')
end
if xp ~= '' then exact(ki, xp, xl, ARGV[12], KEYS[6]) end
call('HSET', KEYS[3], 'g', g, 'n', fresh)
local reply = 'A' .. at .. ',' .. g .. ':' .. table.concat(out)
call('SET', KEYS[2], reply, 'EX', ARGV[2])
return reply
`)

// genReply is a decoded reply of seenGenScript.
type genReply struct {
	stale bool
	at    int    // generation count the answers were computed with
	now   int    // the shard's generation count after the call
	ans   string // '0'/'1' per key answered, from the call's first key
}

// parseGenReply decodes a reply of seenGenScript for a call of m keys
// (answers '0' and '1', and '2' when exact: see luaExact); any other shape
// is an error wrapping ErrCorrupt.
func parseGenReply(v any, m int, exact bool) (genReply, error) {
	str, ok := v.(string)
	if !ok {
		return genReply{}, fmt.Errorf("%w: seen-set script replied %s, want a string", ErrCorrupt, describeReply(v))
	}
	bad := func(why string) (genReply, error) {
		return genReply{}, fmt.Errorf("%w: seen-set script replied %.60q: %s", ErrCorrupt, str, why)
	}
	// count reads a generation count: canonical decimal (as Lua writes
	// it), 1..mlbf.MaxGenerations.
	count := func(s string) (int, bool) {
		if len(s) == 0 || len(s) > 2 || s[0] == '0' {
			return 0, false
		}
		n := 0
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n, n <= mlbf.MaxGenerations
	}
	if rest, ok := strings.CutPrefix(str, "S"); ok {
		g, ok := count(rest)
		if !ok {
			return bad("bad generation count")
		}
		return genReply{stale: true, now: g}, nil
	}
	rest, ok := strings.CutPrefix(str, "A")
	if !ok {
		return bad("want A or S")
	}
	head, ans, ok := strings.Cut(rest, ":")
	if !ok {
		return bad("no answers")
	}
	a, b, ok := strings.Cut(head, ",")
	if !ok {
		return bad("no generation counts")
	}
	var r genReply
	var ok1, ok2 bool
	r.at, ok1 = count(a)
	r.now, ok2 = count(b)
	switch {
	case !ok1 || !ok2:
		return bad("bad generation count")
	case r.now != r.at && r.now != r.at+1:
		return bad("a call adds at most one generation")
	case len(ans) == 0 || len(ans) > m:
		return bad(fmt.Sprintf("%d answers for %d keys", len(ans), m))
	case len(ans) < m && r.now == r.at:
		return bad("a call stops early only when it adds a generation")
	}
	for i := 0; i < len(ans); i++ {
		if ans[i] != '0' && ans[i] != '1' && (!exact || ans[i] != '2') {
			return bad("want only 0 and 1 (and 2 with the exact check)")
		}
	}
	r.ans = ans
	return r, nil
}

// genCall is one script call of a growing filter: some keys of one shard.
// A call stopped by a growth goes on from its first unanswered key, under
// its id + "+" + that index, so that the split, and so every id, is the
// same whoever replays the batch.
type genCall struct {
	shard int
	id    string
	idx   []int // indexes into the batch's keys
	from  int   // idx[:from] are answered
	ans   []byte
	done  bool

	// Of the attempt being sent (prepareGen):
	g      int        // the worker's generation count
	newest [][]uint64 // the words of generation g-1 (nil: none kept)
	keys   []string
	args   []any
	mark   []mlbf.Probe // probes of generation g-1 of the keys sent, for learn
	ends   []int        // per key from idx[from]: end of its probes in mark
}

// groupGen splits a batch into calls: per shard in key order, at most
// MaxBatch keys each, named batch-0, batch-1, ... in the order they are
// opened (each a fresh id without a batch id).
func (s *Seen) groupGen(keys [][]string, batch string) []*genCall {
	lay := s.grow.gens[0].lay
	open := make(map[int]*genCall)
	var calls []*genCall
	probes := make([]mlbf.Probe, 0, lay.MaxProbes())
	for i, seg := range keys {
		var route uint64
		// The route hashes the whole key: the same in every generation.
		probes, route = lay.Probes(seg, probes[:0])
		sh := Shard(route, s.shards)
		cl := open[sh]
		if cl == nil {
			id := batch + "-" + strconv.Itoa(len(calls))
			if batch == "" {
				id = s.NewBatchID()
			}
			cl = &genCall{shard: sh, id: id, idx: make([]int, 0, min(s.maxBatch, (len(keys)-i)/s.shards+8))}
			open[sh] = cl
			calls = append(calls, cl)
		}
		cl.idx = append(cl.idx, i)
		if len(cl.idx) == s.maxBatch {
			delete(open, sh)
		}
	}
	return calls
}

// prepareGen builds the next attempt of a call against the worker's
// current view of its shard.
func (s *Seen) prepareGen(cl *genCall, keys [][]string) {
	g, words := s.view(cl.shard)
	gens := s.grow.gens
	cur := gens[g-1]
	rest := cl.idx[cl.from:]
	cl.g, cl.newest = g, words[g-1]
	n := len(rest)
	// Sized once, so that the slices do not grow (copying) while filling.
	if need := n * cur.lay.MaxProbes(); cap(cl.mark) < need {
		cl.mark = make([]mlbf.Probe, 0, need)
	}
	if cap(cl.ends) < n {
		cl.ends = make([]int, 0, n)
	}
	cl.mark, cl.ends = cl.mark[:0], cl.ends[:0]
	b := &callArgs{
		cnt:  make([]byte, 0, 2*n),
		lens: make([]byte, 0, n*cur.lay.Hashes()*2),
		offs: make([]byte, 0, n*cur.lay.Hashes()*2*8),
		sent: make(map[uint64]struct{}, n*cur.lay.Hashes()*2),
	}
	probes := make([]mlbf.Probe, 0, cur.lay.MaxProbes())
	for _, i := range rest {
		seg := keys[i]
		s.addExact(b, seg)
		old := false
		for j := g - 2; j >= 0 && !old; j-- {
			probes, _ = gens[j].lay.Probes(seg, probes[:0])
			old = wordsHave(words[j], probes)
		}
		if old {
			// No probes: the script answers present and leaves the
			// newest generation alone.
			b.cnt = append(b.cnt, 0, 0)
			cl.ends = append(cl.ends, len(cl.mark))
			continue
		}
		probes, _ = cur.lay.Probes(seg, probes[:0])
		sent := 0
		for _, p := range probes {
			cl.mark = append(cl.mark, p)
			if cl.newest != nil && hasBit(cl.newest, p) {
				continue
			}
			off := cur.base[p.Layer] + p.Bit
			if _, dup := b.sent[off]; dup {
				continue
			}
			b.sent[off] = struct{}{}
			at := len(b.offs)
			b.offs = strconv.AppendUint(b.offs, off, 10)
			b.lens = append(b.lens, byte(len(b.offs)-at))
			sent++
		}
		b.cnt = append(b.cnt, byte(sent>>8), byte(sent))
		cl.ends = append(cl.ends, len(cl.mark))
	}
	next := int64(-1)
	if g < len(gens) {
		next = int64(gens[g].total) - 1
	}
	id := cl.id
	if cl.from > 0 {
		id += "+" + strconv.Itoa(cl.from)
	}
	cl.keys = []string{s.keys[cl.shard][0], s.tag(cl.shard) + ":r:" + id, s.genStateKey(cl.shard),
		s.genKey(cl.shard, g-1), s.genKey(cl.shard, min(g, len(gens)-1)), s.exactStatsKey(cl.shard)}
	cl.args = append([]any{s.fp, s.ttl, n, g, cur.cap, next, b.cnt, b.lens, b.offs}, s.exactArgs(cl.shard, b)...)
}

// apply records a call's reply; it returns the shard's generation count
// the reply reports when the worker's view is older (0 otherwise).
func (s *Seen) apply(cl *genCall, r genReply) (refresh int, err error) {
	if r.stale {
		if r.now <= cl.g {
			return 0, fmt.Errorf("%w: seen-set shard %d has %d generations, this worker saw %d", ErrCorrupt, cl.shard, r.now, cl.g)
		}
		return r.now, nil
	}
	if r.at == cl.g && cl.newest != nil {
		// The keys answered went into the generation this attempt
		// computed probes for: their probes are set there now. (A
		// stored answer of another generation count is of keys that
		// went elsewhere; as it happens, this worker then finds them
		// all in its old generations and marks none, or learns into
		// words about to be replaced by the refresh, but that is not
		// a property to lean on.)
		end := cl.ends[len(r.ans)-1]
		for _, p := range cl.mark[:end] {
			atomic.OrUint64(&cl.newest[p.Layer][p.Bit>>6], 1<<(p.Bit&63))
		}
	}
	cl.ans = append(cl.ans, r.ans...)
	cl.from += len(r.ans)
	cl.done = cl.from == len(cl.idx)
	if r.now > cl.g {
		return r.now, nil
	}
	return 0, nil
}

// testAndAddGen is testAndAddBatchID for a growing filter.
func (s *Seen) testAndAddGen(ctx context.Context, batch string, keys [][]string, present []bool) error {
	calls := s.groupGen(keys, batch)
	for {
		left := false
		for _, cl := range calls {
			left = left || !cl.done
		}
		if !left {
			break
		}
		refresh, err := s.runGen(ctx, calls, keys)
		if err != nil {
			return err
		}
		for sh, g := range refresh {
			if err := s.refreshShard(ctx, sh, g); err != nil {
				return s.wrapErr(err)
			}
		}
	}
	for _, cl := range calls {
		for j, i := range cl.idx {
			present[i] = cl.ans[j] == '1'
		}
	}
	return nil
}

// runGen sends one attempt of every call not done in one pipeline,
// retrying transient failures, and returns the shards whose view must be
// refreshed (to the generation count given) before their calls go on.
func (s *Seen) runGen(ctx context.Context, calls []*genCall, keys [][]string) (map[int]int, error) {
	rdb := s.c.rdb
	refresh := map[int]int{}
	err := s.c.retry(ctx, func(ctx context.Context) error {
		var todo []*genCall
		for _, cl := range calls {
			if !cl.done && refresh[cl.shard] == 0 {
				todo = append(todo, cl)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		for _, cl := range todo {
			s.prepareGen(cl, keys)
		}
		cmds := make([]*redis.Cmd, len(todo))
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, cl := range todo {
				cmds[j] = seenGenScript.EvalSha(ctx, p, cl.keys, cl.args...)
			}
			return nil
		})
		var first error
		for j, cl := range todo {
			cmd := cmds[j]
			if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
				cmd = seenGenScript.Eval(ctx, rdb, cl.keys, cl.args...)
			}
			v, err := cmd.Result()
			var r genReply
			if err == nil {
				r, err = parseGenReply(v, len(cl.idx)-cl.from, s.buckets > 0)
			}
			var g int
			if err == nil {
				g, err = s.apply(cl, r)
			}
			if err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			if g > refresh[cl.shard] {
				refresh[cl.shard] = g
			}
		}
		return first
	})
	if err != nil {
		return nil, s.wrapErr(err)
	}
	return refresh, nil
}

// GrowthStats describes a growing seen-set (SeenOptions.Growth).
type GrowthStats struct {
	// Generations holds each shard's generation count: 1 until the
	// shard's first growth.
	Generations []int
	// MaxGenerations is the most generations a shard may have: the last
	// before one whose bitmap would exceed SeenOptions.MaxKeyBytes, at most
	// mlbf.MaxGenerations. A shard that has them all is saturated: its
	// newest generation keeps taking keys past its capacity, and the
	// compound rate climbs past the target.
	MaxGenerations int
	// Saturated counts the shards with MaxGenerations generations whose
	// newest generation has taken its capacity.
	Saturated int
	// Capacity holds, per generation (the oldest first), the keys it is
	// sized for over all shards; Keys the keys it reported new over the
	// shards that have it (its capacity, for every shard that grew past
	// it); Bits its bitmaps' size over those shards.
	Capacity, Keys, Bits []uint64
	// Fill holds, per generation and per layer (the integrity layer
	// last), the fraction of bits set over the shards that have it
	// (BITCOUNT: O(size), meant for status displays; an old generation,
	// which never changes, is counted once per Seen and remembered).
	Fill [][]float64
	// FalsePositiveRate estimates the compound rate for a new key now:
	// per shard 1 - Π(1 - f_i) over its generations, f_i the integrity
	// layer's mlbf.BlockedFalsePositiveRate at the keys it took (the
	// model the generations are sized with), averaged over the shards
	// (keys are routed to shards uniformly).
	FalsePositiveRate float64
	// ExpectedFalsePositives estimates the new keys taken for present so
	// far, summed over the shards: per shard and generation, the keys it
	// took times the older generations' compound rate, plus the rest
	// times mlbf.BlockedExpectedFalsePositives (the rate integrated over
	// the fill each key met), as mlbf.ScalableStats computes it.
	ExpectedFalsePositives float64
}

// genState reads every shard's generation count and the keys its newest
// generation took.
func (s *Seen) genState(ctx context.Context) ([]int, []uint64, error) {
	cmds := make([]*redis.SliceCmd, s.shards)
	err := s.pipelineRetry(ctx, func(ctx context.Context, p redis.Pipeliner) {
		for sh := range cmds {
			cmds[sh] = p.HMGet(ctx, s.genStateKey(sh), "g", "n")
		}
	})
	if err != nil {
		return nil, nil, s.wrapErr(err)
	}
	gs := make([]int, s.shards)
	ns := make([]uint64, s.shards)
	for sh, cmd := range cmds {
		v := cmd.Val()
		gstr, _ := v[0].(string)
		nstr, _ := v[1].(string)
		g, err1 := strconv.Atoi(gstr)
		n, err2 := strconv.ParseUint(nstr, 10, 64)
		if v[0] == nil || v[1] == nil {
			return nil, nil, fmt.Errorf("%w: seen-set shard %d generation state missing", ErrStateLost, sh)
		}
		if err1 != nil || err2 != nil || g < 1 || g > len(s.grow.gens) {
			return nil, nil, fmt.Errorf("%w: seen-set shard %d generation state %q, %q", ErrCorrupt, sh, gstr, nstr)
		}
		gs[sh], ns[sh] = g, n
	}
	return gs, ns, nil
}

// bitCounts counts the bits set in each layer of generation i of a shard,
// appending one command per layer to cmds.
func (s *Seen) bitCounts(ctx context.Context, p redis.Pipeliner, sh, i int, cmds []*redis.IntCmd) []*redis.IntCmd {
	geo := s.grow.gens[i]
	for l, b := range geo.lay.LayerBits() {
		cmds = append(cmds, p.BitCount(ctx, s.genKey(sh, i), &redis.BitCount{
			Start: int64(geo.base[l] / 8), End: int64((geo.base[l]+b+7)/8 - 1)}))
	}
	return cmds
}

// fillNewest is Fill for a growing filter: every shard's newest generation.
func (s *Seen) fillNewest(ctx context.Context) ([]float64, error) {
	gs, _, err := s.genState(ctx)
	if err != nil {
		return nil, err
	}
	var cmds []*redis.IntCmd
	err = s.pipelineRetry(ctx, func(ctx context.Context, p redis.Pipeliner) {
		cmds = cmds[:0]
		for sh, g := range gs {
			cmds = s.bitCounts(ctx, p, sh, g-1, cmds)
		}
	})
	if err != nil {
		return nil, s.wrapErr(err)
	}
	L := s.lay.Layers()
	set := make([]float64, L+1)
	size := make([]float64, L+1)
	for sh, g := range gs {
		for l, b := range s.grow.gens[g-1].lay.LayerBits() {
			set[l] += float64(cmds[sh*(L+1)+l].Val())
			size[l] += float64(b)
		}
	}
	for l := range set {
		set[l] /= size[l]
	}
	return set, nil
}

// Growth describes the generations of a growing seen-set; without
// SeenOptions.Growth it fails with an error wrapping ErrInvalidOptions.
func (s *Seen) Growth(ctx context.Context) (GrowthStats, error) {
	if s.grow == nil {
		return GrowthStats{}, fmt.Errorf("%w: the seen-set does not grow (SeenOptions.Growth is nil)", ErrConfig)
	}
	gs, ns, err := s.genState(ctx)
	if err != nil {
		return GrowthStats{}, err
	}
	top := 0
	for _, g := range gs {
		top = max(top, g)
	}
	// counts[sh][i]: the set bits per layer of shard sh's generation i,
	// memoized for the old generations, counted (BITCOUNT) for the rest.
	counts := make([][][]int64, len(gs))
	gr := s.grow
	gr.countsMu.Lock()
	for sh, g := range gs {
		counts[sh] = make([][]int64, g)
		for i := 0; i < g-1; i++ {
			counts[sh][i] = gr.oldCounts[[2]int{sh, i}]
		}
	}
	gr.countsMu.Unlock()
	var cmds []*redis.IntCmd
	err = s.pipelineRetry(ctx, func(ctx context.Context, p redis.Pipeliner) {
		cmds = cmds[:0]
		for sh, g := range gs {
			for i := 0; i < g; i++ {
				if counts[sh][i] == nil {
					cmds = s.bitCounts(ctx, p, sh, i, cmds)
				}
			}
		}
	})
	if err != nil {
		return GrowthStats{}, s.wrapErr(err)
	}
	c := 0
	gr.countsMu.Lock()
	for sh, g := range gs {
		for i := 0; i < g; i++ {
			if counts[sh][i] != nil {
				continue
			}
			n := make([]int64, len(gr.gens[i].lay.LayerBits()))
			for l := range n {
				n[l] = cmds[c].Val()
				c++
			}
			counts[sh][i] = n
			if i < g-1 {
				if gr.oldCounts == nil {
					gr.oldCounts = map[[2]int][]int64{}
				}
				gr.oldCounts[[2]int{sh, i}] = n
			}
		}
	}
	gr.countsMu.Unlock()
	L := s.lay.Layers()
	st := GrowthStats{
		Generations: gs, MaxGenerations: len(s.grow.gens),
		Capacity: make([]uint64, top), Keys: make([]uint64, top), Bits: make([]uint64, top), Fill: make([][]float64, top),
	}
	size := make([][]float64, top)
	for i := range st.Fill {
		st.Fill[i] = make([]float64, L+1)
		size[i] = make([]float64, L+1)
		st.Capacity[i] = s.grow.gens[i].cap * uint64(s.shards)
	}
	var fp float64
	for sh, g := range gs {
		pass := 1.0
		for i := 0; i < g; i++ {
			geo := s.grow.gens[i]
			keys := geo.cap
			if i == g-1 {
				keys = ns[sh]
			}
			st.Keys[i] += keys
			st.Bits[i] += geo.total
			sizes := geo.lay.LayerBits()
			for l, b := range sizes {
				st.Fill[i][l] += float64(counts[sh][i][l])
				size[i][l] += float64(b)
			}
			k := geo.lay.Hashes()
			st.ExpectedFalsePositives += float64(keys)*(1-pass) + pass*mlbf.BlockedExpectedFalsePositives(k, sizes[L], keys)
			pass *= 1 - mlbf.BlockedFalsePositiveRate(k, sizes[L], keys)
		}
		fp += 1 - pass
		if g == len(s.grow.gens) && ns[sh] >= s.grow.gens[g-1].cap {
			st.Saturated++
		}
	}
	for i := range st.Fill {
		for l := range st.Fill[i] {
			st.Fill[i][l] /= size[i][l]
		}
	}
	st.FalsePositiveRate = fp / float64(s.shards)
	return st, nil
}
