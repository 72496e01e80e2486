package redisfrontier

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/zeebo/xxh3"

	"github.com/layercrawl/layercrawl/countmin"
	"github.com/layercrawl/layercrawl/frontier"
)

// Crawl order in Redis (frontier.OrderInlinks). The crawl's order is
// stored in {tag}:order by the worker that begins the crawl, with the
// shape and seed of the in-link sketch; every other worker must be given
// the same order (ErrOrderMismatch) and takes the sketch's shape and
// seed from there.
//
// The in-link counts are a count-min sketch with conservative update
// that counts as a countmin.Sketch of the same shape and seed
// (countmin.HashIndexes; TestInlinkSketchAgreesWithCountmin): one string
// {tag}:cm of rows × width big-endian 32-bit counters, row after row,
// read with BITFIELD_RO and written with BITFIELD (32 MiB at the default
// ExpectedURLs, 2 MiB with MaxPages 10,000). It lives under the
// frontier's hash tag, on the frontier's slot, so that the done script
// that queues a page's new URLs also counts the page's links and raises
// the URLs of those links that are queued, atomically and under the
// host's lease:
// the script's token check, which makes a commit retried after a lost
// reply queue nothing again, also keeps it from counting a page twice,
// and a staged completion finished by another worker counts once.
//
// With inlinks, a host's entries are queued in a zset {tag}:zq:<host>
// whose member is the URL's count key (16 hex digits of the xxh3 of the
// canonical URL, as frontier's countKey) and whose score is
// rank·2^32 + (2^32-1 - seq): the rank (the URL's count when queued or
// last raised, capped at 2^21-2; 2^21-1 for a seed) above, the
// host's queue sequence below, so that ZPOPMAX takes the most linked-to
// URL, the oldest among equals. The entries are in the hash
// {tag}:ze:<host> under the same member. A counted link whose URL is
// queued raises its score in place (rank only; its sequence stays), so
// no link rewrites a queue. Entries put back (an expired lease, Defer,
// RetryFailed) go to the host's list {tag}:q:<host> as with fifo, and
// are served before the zset's: they had their turn already. A member
// already in the hash (two URLs with one 64-bit count key) goes to the
// list too, so that no URL is lost.
//
// The choice among hosts: a host whose ready time has passed moves, at
// the next Next, from {tag}:ready to the zset {tag}:rank, scored by its
// best rank (a seed's while its list holds a put-back entry) above and
// the stats' served count at its last serve below (reversed, so that
// among equals the host served longest ago goes first); Next leases the
// highest. A counted link that raises a queued URL above its host's
// rank raises the host's score in {tag}:rank too. A host is in at most
// one of ready, rank and leases: it is leased only from rank, and put
// in ready only when neither leased nor in rank.

// ErrOrderMismatch is returned by Open when the crawl in Redis was begun
// with another order (Options.Order): every worker of a crawl must hand
// out entries in the same order, as they share its queues.
var ErrOrderMismatch = errors.New("redisfrontier: crawl order differs from the one in redis")

// countChunk is how many counters one BITFIELD_RO call of the done
// script reads (3 arguments each), and 3/4 of it how many one BITFIELD
// call writes (4 each); it also bounds the members of one ZMSCORE or
// ZADD. 10 and 7 keep a call within the 32 arguments a script's
// redis.call passes without an allocation each (BenchmarkOrder).
const countChunk = 10

// orderMeta is what {tag}:order holds.
type orderMeta struct {
	order frontier.Order
	cms   countmin.Options // with OrderInlinks
}

func (m orderMeta) String() string {
	if m.order != frontier.OrderInlinks {
		return m.order.String()
	}
	return fmt.Sprintf("inlinks v1 rows=%d width=%d seed=%016x", m.cms.Rows, m.cms.Width, m.cms.Seed)
}

// parseOrderMeta reads what orderMeta.String wrote.
func parseOrderMeta(s string) (orderMeta, error) {
	if s == "fifo" {
		return orderMeta{order: frontier.OrderFIFO}, nil
	}
	f := strings.Fields(s)
	if len(f) != 5 || f[0] != "inlinks" || f[1] != "v1" {
		return orderMeta{}, fmt.Errorf("%w: crawl order %.80q", ErrCorrupt, s)
	}
	m := orderMeta{order: frontier.OrderInlinks}
	var err error
	for _, kv := range f[2:] {
		k, v, _ := strings.Cut(kv, "=")
		var n uint64
		switch k {
		case "rows":
			n, err = strconv.ParseUint(v, 10, 8)
			m.cms.Rows = int(n)
		case "width":
			n, err = strconv.ParseUint(v, 10, 32)
			m.cms.Width = int(n)
		case "seed":
			m.cms.Seed, err = strconv.ParseUint(v, 16, 64)
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return orderMeta{}, fmt.Errorf("%w: crawl order %.80q: %s: %w", ErrCorrupt, s, k, err)
		}
	}
	if m.cms.Rows < 1 || m.cms.Rows > countmin.MaxRows || m.cms.Width < 1 || m.cms.Width > countmin.MaxWidth {
		return orderMeta{}, fmt.Errorf("%w: crawl order %.80q: sketch shape out of bounds", ErrCorrupt, s)
	}
	return m, nil
}

// orderScript claims the crawl's order: it returns the stored one, or
// stores ARGV[2] and returns it. A crawl begun without a stored order (an
// earlier layercrawl's: its stats exist) is fifo. With inlinks it creates
// the sketch's key at its full size (ARGV[3] bytes), so that it does not
// grow write by write.
var orderScript = redis.NewScript(`
local tag = ARGV[1]
local k = tag..':order'
local m = redis.call('GET', k)
if m then return m end
if redis.call('EXISTS', tag..':stats') == 1 then m = 'fifo' else m = ARGV[2] end
redis.call('SET', k, m)
if m ~= 'fifo' and redis.call('EXISTS', tag..':cm') == 0 then
  redis.call('SETRANGE', tag..':cm', tonumber(ARGV[3]) - 1, '\0')
end
return m
`)

// openOrder claims or reads the crawl's order and, with inlinks, the
// sketch's shape and seed.
func (f *Frontier) openOrder(ctx context.Context) error {
	want := orderMeta{order: f.opts.Order}
	if want.order == frontier.OrderInlinks {
		rows, width := frontier.InlinksSketchShape(f.opts.ExpectedURLs, f.opts.MaxPages)
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("redisfrontier: in-link sketch seed: %w", err)
		}
		want.cms = countmin.Options{Rows: rows, Width: width, Seed: binary.LittleEndian.Uint64(b[:])}
	}
	var stored string
	err := f.c.retry(ctx, func(ctx context.Context) error {
		var err error
		stored, err = orderScript.Run(ctx, f.c.rdb, []string{f.key("order")}, f.tag, want.String(), 4*want.cms.Rows*want.cms.Width).Text()
		return err
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: crawl order: %w", err)
	}
	m, err := parseOrderMeta(stored)
	if err != nil {
		return err
	}
	if m.order != want.order {
		return fmt.Errorf("%w: this worker's order is %v, the crawl's %v", ErrOrderMismatch, want.order, m.order)
	}
	f.order, f.chunk = m, countChunk
	return nil
}

// countKey is the in-link sketch's key of a canonical URL, as
// frontier's.
func countKey(canonical string) uint64 { return xxh3.HashString(canonical) }

// countMember is a URL's member in its host's zset.
func countMember(ck uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ck)
	return hex.EncodeToString(b[:])
}

// recordHost returns the host name of a record's URL, lower case.
func recordHost(r record) (string, error) {
	u, err := url.Parse(r.URL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: queued URL %q has no host", ErrCorrupt, r.URL)
	}
	return strings.ToLower(u.Host), nil
}

func encodeJSON(r record) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Kinds of a key in the done script's count section.
const (
	keyCounted = "1" // a link of the fetched page: counted, then read
	keyRead    = "0" // a new URL that is not a link of the page (a redirect target, a sitemap's URL): read
	keySeed    = "s" // a seed: ranks above every count, not read
)

// queueArgs returns the done script's arguments from ARGV[19] on: the
// count section (the number of keys, the sketch's rows, countChunk, then
// per key its host, member, kind and counter indexes: the page's counted
// links, then the new URLs that are not among them) and the entries to
// queue, each as (host, entry) with fifo and (host, entry, key number)
// with inlinks. st.Cands[i] for i in st.Counted are the page's links.
func (f *Frontier) queueArgs(st stage, adds []record) ([]any, error) {
	hosts := make([]string, len(adds))
	for i, a := range adds {
		h, err := recordHost(a)
		if err != nil {
			return nil, err
		}
		hosts[i] = h
	}
	if f.order.order != frontier.OrderInlinks {
		args := []any{0, 0, 0}
		for i, a := range adds {
			args = append(args, hosts[i], encodeJSON(a))
		}
		return args, nil
	}
	cms := f.order.cms
	idx := make([]int, cms.Rows)
	var keys []any
	num := map[string]int{} // key number by URL
	addKey := func(u, host, kind string) int {
		if n, ok := num[u]; ok {
			return n
		}
		ck := countKey(u)
		keys = append(keys, host, countMember(ck), kind)
		countmin.HashIndexes(cms, ck, idx)
		for _, x := range idx {
			keys = append(keys, "#"+strconv.Itoa(x))
		}
		num[u] = len(num) + 1
		return num[u]
	}
	for _, i := range st.Counted {
		if i < 0 || i >= len(st.Cands) {
			return nil, fmt.Errorf("%w: stage counts candidate %d of %d", ErrCorrupt, i, len(st.Cands))
		}
		c := st.Cands[i]
		h, err := recordHost(c)
		if err != nil {
			return nil, err
		}
		addKey(c.URL, h, keyCounted)
	}
	var tail []any
	for i, a := range adds {
		kind := keyRead
		if a.Via == "" {
			kind = keySeed
		}
		n := addKey(a.URL, hosts[i], kind)
		tail = append(tail, hosts[i], encodeJSON(a), n)
	}
	args := make([]any, 0, 3+len(keys)+len(tail))
	args = append(args, len(num), cms.Rows, f.chunk)
	args = append(args, keys...)
	return append(args, tail...), nil
}

// orderLua defines the Lua functions the frontier's scripts share to
// queue and serve with either order, and inl, whether the crawl is
// inlinks.
//
// Ranks in a queued entry's score: seeds rank SEEDRANK (2^21-1), above
// every count; counts above SEEDRANK-1 rank as SEEDRANK-1 (they tie). A
// score, rank·2^32 + 32 bits of sequence, stays an exact integer in a
// double, and fmtscore writes it whole (redis.call would write a Lua
// number with 14 significant digits).
const orderLua = `
local RK = 4294967296
local SEEDRANK = 2097151
-- inl says the crawl is inlinks (ARGV[1] of every script that uses these
-- is the frontier's tag). A fifo crawl's scripts define only three small
-- functions: a closure made on every call costs.
local inl = redis.call('GET', ARGV[1]..':order')
inl = inl and string.sub(inl, 1, 8) == 'inlinks '
local qlen, qpop, makeReady, rankHost, countLinks, enqueueAll
if not inl then
qlen = function(tag, _, h) return redis.call('LLEN', tag..':q:'..h) end
qpop = function(tag, _, h) return redis.call('LPOP', tag..':q:'..h) end
makeReady = function(tag, _, h, t)
  if not redis.call('ZSCORE', tag..':leases', h) then redis.call('ZADD', tag..':ready', 'LT', t, h) end
end
else
local function fmtscore(x) return string.format('%.0f', x) end
-- qlen is how many entries h has queued (not counting retries).
qlen = function(tag, inl, h)
  local n = redis.call('LLEN', tag..':q:'..h)
  if inl then n = n + redis.call('ZCARD', tag..':zq:'..h) end
  return n
end
-- qpop takes h's next entry: a put-back one first, then the most linked-to.
qpop = function(tag, inl, h)
  local e = redis.call('LPOP', tag..':q:'..h)
  if e or not inl then return e end
  local zq, ze = tag..':zq:'..h, tag..':ze:'..h
  while true do
    local m = redis.call('ZPOPMAX', zq)
    if not m[1] then return false end
    e = redis.call('HGET', ze, m[1])
    if e then
      redis.call('HDEL', ze, m[1])
      return e
    end
  end
end
-- hostRank is the best rank among h's queued entries.
local function hostRank(tag, h)
  if redis.call('LLEN', tag..':q:'..h) > 0 then return SEEDRANK end
  local top = redis.call('ZRANGE', tag..':zq:'..h, -1, -1, 'WITHSCORES')
  if top[2] then return math.floor(tonumber(top[2]) / RK) end
  return 0
end
-- rankHost puts h, due now, in the rank zset.
rankHost = function(tag, h)
  local srv = tonumber(redis.call('HGET', tag..':srv', h) or '0') % RK
  redis.call('ZADD', tag..':rank', fmtscore(hostRank(tag, h) * RK + (RK - 1 - srv)), h)
end
-- raiseHost raises h's score in the rank zset to rank r, if h is there
-- below it.
local function raiseHost(tag, h, r)
  local hs = redis.call('ZSCORE', tag..':rank', h)
  if hs then
    hs = tonumber(hs)
    if math.floor(hs / RK) < r then redis.call('ZADD', tag..':rank', fmtscore(r * RK + hs % RK), h) end
  end
end
-- makeReady makes h ready at t (or sooner if it is ready sooner), unless
-- it is leased or, with inlinks, ready already in the rank zset.
makeReady = function(tag, inl, h, t)
  if redis.call('ZSCORE', tag..':leases', h) then return end
  if inl and redis.call('ZSCORE', tag..':rank', h) then return end
  redis.call('ZADD', tag..':ready', 'LT', t, h)
end
-- countLinks runs the count section that starts at ARGV[i]: it counts
-- the page's links (conservative update), raises those queued, and
-- returns the keys' members and counts, the index after the section and
-- the chunk.
countLinks = function(tag, i)
  local nk, rows, chunk = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if chunk < 1 then chunk = 64 end
  i = i + 3
  local members, counts = {}, {}
  if nk == 0 then return members, counts, i, chunk end
  local cm = tag..':cm'
  local val, order = {}, {}
  local j = i
  for k = 1, nk do
    if ARGV[j + 2] ~= 's' then
      for r = 1, rows do
        local p = ARGV[j + 2 + r]
        if val[p] == nil then val[p] = 0; order[#order + 1] = p end
      end
    end
    j = j + 3 + rows
  end
  for a = 1, #order, chunk do
    local b = math.min(a + chunk - 1, #order)
    local args = {}
    for q = a, b do args[#args + 1] = 'GET'; args[#args + 1] = 'u32'; args[#args + 1] = order[q] end
    local got = redis.call('BITFIELD_RO', cm, unpack(args))
    for q = a, b do val[order[q]] = got[q - a + 1] end
  end
  local dirty, byHost, hosts = {}, {}, {}
  j = i
  for k = 1, nk do
    local h, mem, kind = ARGV[j], ARGV[j + 1], ARGV[j + 2]
    members[k] = mem
    if kind == 's' then
      counts[k] = SEEDRANK
    else
      local m = nil
      for r = 1, rows do
        local v = val[ARGV[j + 2 + r]]
        if m == nil or v < m then m = v end
      end
      if kind == '1' and m < 4294967295 then
        for r = 1, rows do
          local p = ARGV[j + 2 + r]
          if val[p] == m then
            if not dirty[p] then dirty[#dirty + 1] = p; dirty[p] = true end
            val[p] = m + 1
          end
        end
        m = m + 1
        local hl = byHost[h]
        if not hl then
          hl = {mems = {}, ranks = {}}
          byHost[h] = hl
          hosts[#hosts + 1] = h
        end
        hl.mems[#hl.mems + 1] = mem
        hl.ranks[#hl.ranks + 1] = math.min(m, SEEDRANK - 1)
      end
      counts[k] = math.min(m, SEEDRANK - 1)
    end
    j = j + 3 + rows
  end
  local setChunk = math.max(1, math.floor(chunk * 3 / 4))
  for a = 1, #dirty, setChunk do
    local b = math.min(a + setChunk - 1, #dirty)
    local args = {}
    for q = a, b do args[#args + 1] = 'SET'; args[#args + 1] = 'u32'; args[#args + 1] = dirty[q]; args[#args + 1] = val[dirty[q]] end
    redis.call('BITFIELD', cm, unpack(args))
  end
  -- The counted URLs that are queued rise to their new counts (their
  -- sequence kept): one ZMSCORE and at most one ZADD per host and chunk.
  for _, h in ipairs(hosts) do
    local hl, zq = byHost[h], tag..':zq:'..h
    local best = 0
    for a = 1, #hl.mems, chunk do
      local b = math.min(a + chunk - 1, #hl.mems)
      local got = redis.call('ZMSCORE', zq, unpack(hl.mems, a, b))
      local args = {}
      for q = a, b do
        local sc = got[q - a + 1]
        if sc then
          sc = tonumber(sc)
          local rk = hl.ranks[q]
          if math.floor(sc / RK) < rk then
            args[#args + 1] = fmtscore(rk * RK + sc % RK)
            args[#args + 1] = hl.mems[q]
            if rk > best then best = rk end
          end
        end
      end
      if #args > 0 then redis.call('ZADD', zq, 'XX', unpack(args)) end
    end
    if best > 0 then raiseHost(tag, h, best) end
  end
  return members, counts, j, chunk
end
-- enqueueAll queues the entries from ARGV[first] on, as (host, entry,
-- key number) triples, by host: one ZMSCORE (members taken: two URLs of
-- one count key), one HSET, one HINCRBY, one ZADD per host and chunk. A
-- taken member's entry goes to the host's list. It makes each host other
-- than h ready and returns the entries queued.
enqueueAll = function(tag, h, now, first, members, counts, chunk)
  local byHost, hosts, n = {}, {}, 0
  for i = first, #ARGV, 3 do
    local ah, k = ARGV[i], tonumber(ARGV[i + 2])
    local hl = byHost[ah]
    if not hl then
      hl = {es = {}, ms = {}, rs = {}}
      byHost[ah] = hl
      hosts[#hosts + 1] = ah
    end
    hl.es[#hl.es + 1] = ARGV[i + 1]
    hl.ms[#hl.ms + 1] = members[k]
    hl.rs[#hl.rs + 1] = counts[k]
    n = n + 1
  end
  for _, ah in ipairs(hosts) do
    local hl = byHost[ah]
    local zq, ze = tag..':zq:'..ah, tag..':ze:'..ah
    local taken = {}
    for a = 1, #hl.ms, chunk do
      local b = math.min(a + chunk - 1, #hl.ms)
      local got = redis.call('ZMSCORE', zq, unpack(hl.ms, a, b))
      for q = a, b do
        if got[q - a + 1] then taken[hl.ms[q]] = true end
      end
    end
    local seq = redis.call('HINCRBY', tag..':zs', ah, #hl.ms) - #hl.ms
    local best, fields, scores, spill = 0, {}, {}, {}
    for q = 1, #hl.ms do
      seq = seq + 1
      local m, r = hl.ms[q], hl.rs[q]
      if taken[m] then
        spill[#spill + 1] = hl.es[q]
      else
        taken[m] = true
        fields[#fields + 1] = m
        fields[#fields + 1] = hl.es[q]
        scores[#scores + 1] = fmtscore(r * RK + (RK - 1 - seq % RK))
        scores[#scores + 1] = m
        if r > best then best = r end
      end
    end
    for a = 1, #fields, 2 * chunk do redis.call('HSET', ze, unpack(fields, a, math.min(a + 2 * chunk - 1, #fields))) end
    for a = 1, #scores, 2 * chunk do redis.call('ZADD', zq, unpack(scores, a, math.min(a + 2 * chunk - 1, #scores))) end
    for a = 1, #spill, chunk do redis.call('RPUSH', tag..':q:'..ah, unpack(spill, a, math.min(a + chunk - 1, #spill))) end
    if best > 0 then raiseHost(tag, ah, best) end
    if ah ~= h then
      local t = tonumber(redis.call('HGET', tag..':next', ah) or '0')
      if t < now then t = now end
      makeReady(tag, true, ah, t)
    end
  end
  return n
end
end
`

// inlinkCounts reads the sketch's counts of URLs (canonical).
func (f *Frontier) inlinkCounts(ctx context.Context, urls []string) ([]uint32, error) {
	if f.order.order != frontier.OrderInlinks {
		return nil, fmt.Errorf("%w: the crawl's order is %v, not inlinks", ErrInvalidOptions, f.order.order)
	}
	cms := f.order.cms
	idx := make([]int, cms.Rows)
	out := make([]uint32, len(urls))
	for i, u := range urls {
		countmin.HashIndexes(cms, countKey(u), idx)
		args := make([]any, 0, 3*len(idx))
		for _, x := range idx {
			args = append(args, "GET", "u32", "#"+strconv.Itoa(x))
		}
		var vals []int64
		err := f.c.retry(ctx, func(ctx context.Context) error {
			var err error
			vals, err = f.c.rdb.BitField(ctx, f.key("cm"), args...).Result()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("redisfrontier: in-link counts: %w", err)
		}
		m := int64(-1)
		for _, v := range vals {
			if m < 0 || v < m {
				m = v
			}
		}
		out[i] = uint32(m)
	}
	return out, nil
}
