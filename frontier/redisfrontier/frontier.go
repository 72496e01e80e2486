package redisfrontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
)

// ErrCorrupt is wrapped by the errors about records in Redis that do not
// decode and about script replies of an unexpected shape. It is never
// transient: retrying would read the same.
var ErrCorrupt = errors.New("redisfrontier: corrupt record or reply")

// Options configures a Frontier. Seen and Normalizer are required. A zero
// field takes its documented default; a negative limit is off.
type Options struct {
	Seen       *Seen
	Normalizer frontier.Normalizer
	// Domain returns the registrable domain of a host name; required with
	// frontier.ScopeDomain.
	Domain func(host string) (string, error)
	// Admission are the rules discovered URLs must pass, as in
	// frontier.Options. The per-host and per-prefix counts behind
	// Limits.MaxHostURLs and Limits.MaxChildren are this worker's own:
	// each worker counts the URLs it queued, so with N workers a host may
	// get up to N times MaxHostURLs in all.
	Admission frontier.AdmissionOptions
	// Politeness holds across all workers: Delay is the least time
	// between two requests to one host by any worker.
	Politeness frontier.PolitenessOptions
	// MaxPages stops handing out entries once that many have been handed
	// out by all workers together (re-queued entries count again); 0
	// (default) and negative: no limit.
	MaxPages int64
	// Order is the order entries are handed out in: frontier.OrderFIFO
	// (the default) or frontier.OrderInlinks (order.go). The worker that
	// begins a crawl stores its order in Redis; Open refuses a worker
	// given another with ErrOrderMismatch.
	Order frontier.Order
	// ExpectedURLs sizes the in-link sketch of OrderInlinks with MaxPages
	// (frontier.InlinksSketchShape) when this worker begins the crawl;
	// the others take the stored shape. Default 10,000,000.
	ExpectedURLs uint64
	// Lease is how long a worker holds a host after Next handed out one
	// of its entries; when it expires without Done the entry is handed to
	// another worker. It must exceed the whole fetch timeout. Default 2m.
	Lease time.Duration
	// Poll is the longest Next sleeps before looking at Redis again while
	// no host is ready; default 200ms.
	Poll time.Duration
	// Now returns the current time; default time.Now. All workers should
	// have roughly synchronized clocks: ready times and lease expiries are
	// wall-clock milliseconds.
	Now func() time.Time
	// Continuous makes the frontier continuous (schedule.go): Done keeps
	// a URL whose Outcome.Schedule is set in the crawl's due schedule,
	// Next queues it again when due and never reports the crawl
	// exhausted. Every worker of a continuous crawl sets it: Open
	// refuses a worker without it once the crawl is continuous
	// (ErrNotContinuous). Default false: Outcome.Schedule is ignored.
	Continuous bool
	// Started is when this worker's run began: AddSeeds queues again a
	// seed given again whose failure record is older (a new run of the
	// crawl), not one that failed since (in this run, before this worker
	// got to AddSeeds). Default: when Open is called.
	Started time.Time
}

// EnsureDefaults fills in the zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	o.Admission.EnsureDefaults()
	o.Politeness.EnsureDefaults()
	if o.Lease == 0 {
		o.Lease = 2 * time.Minute
	}
	if o.Poll == 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.ExpectedURLs == 0 {
		o.ExpectedURLs = 10_000_000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Started.IsZero() {
		o.Started = o.Now()
	}
}

// Validate reports whether the options can make a Frontier. It expects
// EnsureDefaults to have run.
func (o *Options) Validate() error {
	switch {
	case o.Seen == nil:
		return fmt.Errorf("%w: Options.Seen is required", ErrInvalidOptions)
	case o.Normalizer == nil:
		return fmt.Errorf("%w: Options.Normalizer is required", ErrInvalidOptions)
	case o.Admission.Scope == frontier.ScopeDomain && o.Domain == nil:
		return fmt.Errorf("%w: Options.Domain is required with ScopeDomain", ErrInvalidOptions)
	case o.Lease <= 0, o.Poll <= 0:
		return fmt.Errorf("%w: non-positive lease %v or poll %v", ErrInvalidOptions, o.Lease, o.Poll)
	case o.Order != frontier.OrderFIFO && o.Order != frontier.OrderInlinks:
		return fmt.Errorf("%w: unknown order %v", ErrInvalidOptions, o.Order)
	}
	if err := o.Admission.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return o.Politeness.Validate()
}

// Frontier is the shared crawl frontier of a distributed crawl. See the
// package documentation.
type Frontier struct {
	c    *Client
	opts Options
	tag  string // hash tag prefix of every frontier key
	// order is the crawl's order as stored in Redis, with the in-link
	// sketch's shape and seed; chunk the counters one BITFIELD call of
	// the done script reads or writes (countChunk).
	order orderMeta
	chunk int

	// adm holds the scope and runs every check before the seen-set,
	// counting refusals for this worker.
	adm *frontier.Admission

	mu sync.Mutex // protects out, scopeVer, beaten and beatFails
	// out holds the leases of the entries handed out and not done, by
	// URL, oldest first: a URL may be out twice when its first lease was
	// ended by the heartbeats (this worker seemed gone) and this worker's
	// Next took it again. Each Done ends one; the ended lease's is fenced.
	out      map[string][]lease
	scopeVer string // version of the scope sets adm holds
	// beaten is set once a Beat succeeded; beatFails is the Client's
	// Failures count when it did: a change means the link broke since.
	beaten    bool
	beatFails uint64

	// nextDue is the earliest due time in the schedule this worker knows
	// of (Unix ms; noDue: none), read from every reply of nextScript and
	// lowered by this worker's Dones; promoting holds a token while one
	// goroutine promotes (schedule.go).
	nextDue   atomic.Int64
	promoting chan struct{}
}

// lease is an entry this worker holds, with its host's throttle
// (adaptive politeness) as Next read it.
type lease struct {
	host, token string
	throttle    time.Duration
}

// record is an entry as queued in Redis.
type record struct {
	URL       string `json:"u"`
	Depth     int    `json:"d,omitempty"`
	Redirects int    `json:"r,omitempty"`
	Via       string `json:"v,omitempty"`
	// Added with hop paths; absent from records queued before them,
	// which decode with their zero values.
	Hops    string `json:"h,omitempty"`
	Sitemap bool   `json:"s,omitempty"`
	LastMod int64  `json:"m,omitempty"` // Unix seconds
	// Attempt counts the earlier fetches that failed transiently (a
	// retry record; frontier.Entry.Attempt).
	Attempt int `json:"a,omitempty"`
}

// maxAttempt bounds a record's attempt count: far above any retry limit.
const maxAttempt = 1000

// maxLastMod bounds a record's lastmod (Unix seconds, about 35,000 years
// either way) so that every accepted value survives time.Unix unchanged.
const maxLastMod = 1 << 40

func encodeRecord(e frontier.Entry) string {
	b, _ := json.Marshal(newRecord(e))
	return string(b)
}

// newRecord returns the record of an entry.
func newRecord(e frontier.Entry) record {
	r := record{URL: e.URL, Depth: e.Depth, Redirects: e.Redirects, Via: e.Via, Hops: e.Hops, Sitemap: e.Sitemap, Attempt: e.Attempt}
	if !e.LastMod.IsZero() {
		r.LastMod = e.LastMod.Unix()
	}
	return r
}

// decodeRecord parses a queued entry, rejecting anything that is not a
// well-formed record of an absolute http(s) URL.
func decodeRecord(s string) (frontier.Entry, error) {
	var r record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return frontier.Entry{}, fmt.Errorf("%w: entry %.60q: %w", ErrCorrupt, s, err)
	}
	if r.URL == "" || r.Depth < 0 || r.Redirects < 0 || len(r.Hops) > frontier.MaxHopPath || r.LastMod < -maxLastMod || r.LastMod > maxLastMod ||
		r.Attempt < 0 || r.Attempt > maxAttempt {
		return frontier.Entry{}, fmt.Errorf("%w: entry %.60q: missing URL, negative depth, overlong hop path, lastmod or attempt out of range", ErrCorrupt, s)
	}
	e := frontier.Entry{URL: r.URL, Depth: r.Depth, Redirects: r.Redirects, Via: r.Via, Hops: r.Hops, Sitemap: r.Sitemap, Attempt: r.Attempt}
	if r.LastMod != 0 {
		e.LastMod = time.Unix(r.LastMod, 0).UTC()
	}
	return e, nil
}

// stage is what Done records under the host's lease before it touches the
// seen-set, so that another worker can finish the completion.
type stage struct {
	Batch   string   `json:"b"`
	Fetched bool     `json:"f,omitempty"`
	Failed  bool     `json:"x,omitempty"`
	DelayMS int64    `json:"w,omitempty"`
	Cands   []record `json:"c,omitempty"`
	// Retry, when set, is the retry record to keep, due at RetryDue
	// (Unix ms): the fetch failed transiently.
	Retry    string `json:"y,omitempty"`
	RetryDue int64  `json:"z,omitempty"`
	// Throttle is the host's new throttle in ms ("" to leave it, "0" to
	// drop it) and Throttled whether the answer asked to slow down
	// (adaptive politeness; frontier.PolitenessOptions.AdaptiveDelay).
	Throttle  string `json:"t,omitempty"`
	Throttled bool   `json:"q,omitempty"`
	// Responded says the request got an HTTP response (counted in the
	// stats' responses).
	Responded bool `json:"p,omitempty"`
	// Counted are the indexes in Cands of the page's links, which
	// OrderInlinks counts (each once).
	Counted []int `json:"k,omitempty"`
	// The schedule section of a continuous frontier's completion
	// (scheduleArgs): "s" to schedule the URL SchedURL due at SchedDue
	// (ms) with the visit record SchedVal, "d" to drop it, "" for
	// neither.
	SchedOp  string `json:"so,omitempty"`
	SchedURL string `json:"su,omitempty"`
	SchedDue int64  `json:"sd,omitempty"`
	SchedVal []byte `json:"sv,omitempty"`
}

func decodeStage(s string) (stage, error) {
	var st stage
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return stage{}, fmt.Errorf("%w: stage: %w", ErrCorrupt, err)
	}
	if st.Batch == "" {
		return stage{}, fmt.Errorf("%w: stage without batch id", ErrCorrupt)
	}
	return st, nil
}

// Open returns the crawl's shared frontier.
func Open(ctx context.Context, c *Client, opts Options) (*Frontier, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	adm, err := frontier.NewAdmission(opts.Normalizer, opts.Domain, opts.Admission)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	f := &Frontier{
		c: c, opts: opts,
		tag: c.prefix + "f:{" + c.prefix + "f}",
		adm: adm,
		out: map[string][]lease{},

		promoting: make(chan struct{}, 1),
	}
	// Unknown until the first reply: 0 makes the first Next look.
	f.nextDue.Store(0)
	if err := f.openOrder(ctx); err != nil {
		return nil, err
	}
	if err := f.openContinuous(ctx); err != nil {
		return nil, err
	}
	if err := f.loadScope(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *Frontier) key(name string) string { return f.tag + ":" + name }

// loadScope reads the seeds' host names and domains. The version is read
// first, so a change racing with the read makes the next Next reload.
func (f *Frontier) loadScope(ctx context.Context) error {
	var hosts, doms []string
	var ver string
	err := f.c.retry(ctx, func(ctx context.Context) error {
		var err error
		if ver, err = f.c.rdb.Get(ctx, f.key("scopever")).Result(); err == redis.Nil {
			ver, err = "", nil
		}
		if err != nil {
			return err
		}
		if hosts, err = f.c.rdb.SMembers(ctx, f.key("seedhosts")).Result(); err != nil {
			return err
		}
		doms, err = f.c.rdb.SMembers(ctx, f.key("seeddomains")).Result()
		return err
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: load scope: %w", err)
	}
	// One critical section for the sets and their version, so that a
	// slower, older load cannot leave old sets under a newer version.
	f.mu.Lock()
	f.adm.SetScope(hosts, doms)
	f.scopeVer = ver
	f.mu.Unlock()
	return nil
}

// nextScript reclaims expired leases and leases the host that has waited
// longest among the ready ones. See the package documentation.
//
// It is idempotent for one token: the host a call leases is remembered
// under n:<token> for the lease's time, and a call with a token that still
// holds its lease returns that lease again instead of taking a second one.
// Without this, a call whose reply was lost (Redis went away after running
// it) and which was then retried left the first host leased to nobody
// until the lease expired: the whole crawl of that host stalled for the
// lease time (2 minutes by default).
var nextScript = redis.NewScript(nextScriptSource)

const nextScriptSource = orderLua + `
local tag = ARGV[1]
local now = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local token = ARGV[4]
local maxPages = tonumber(ARGV[5])
-- firstDue is the schedule's earliest due time (ms), '' if none or the
-- frontier is not continuous (ARGV[6] ~= '1').
local function firstDue()
  if ARGV[6] ~= '1' then return '' end
  local d = redis.call('ZRANGE', tag..':due', 0, 0, 'WITHSCORES')
  return d[2] or ''
end
local ready, leases, tok, out, stg, stats, nxt =
  tag..':ready', tag..':leases', tag..':tok', tag..':out', tag..':stage', tag..':stats', tag..':next'
local req = tag..':n:'..token
local held = redis.call('GET', req)
if held and redis.call('HGET', tok, held) == token then
  local st = redis.call('HGET', stg, held)
  if st then return {'stage', held, st, redis.call('HGET', out, held) or ''} end
  return {'ok', held, redis.call('HGET', out, held) or '', redis.call('GET', tag..':scopever') or '', redis.call('HGET', tag..':thr', held) or '', firstDue()}
end
local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, 100)
for _, h in ipairs(expired) do
  local st = redis.call('HGET', stg, h)
  if st then
    redis.call('HSET', tok, h, token)
    redis.call('ZADD', leases, now + ttl, h)
    redis.call('HINCRBY', stats, 'reclaimed', 1)
    redis.call('SET', req, h, 'PX', ttl)
    return {'stage', h, st, redis.call('HGET', out, h) or ''}
  end
  local e = redis.call('HGET', out, h)
  if e then
    redis.call('LPUSH', tag..':q:'..h, e)
    redis.call('HINCRBY', stats, 'requeued', 1)
  end
  redis.call('HDEL', out, h)
  redis.call('HDEL', tok, h)
  redis.call('ZREM', leases, h)
  if qlen(tag, inl, h) > 0 then
    redis.call('ZADD', ready, now, h)
  else
    local rd = redis.call('ZRANGE', tag..':rq:'..h, 0, 0, 'WITHSCORES')
    if rd[2] then redis.call('ZADD', ready, math.max(now, tonumber(rd[2])), h) end
  end
end
if maxPages > 0 and tonumber(redis.call('HGET', stats, 'served') or '0') >= maxPages then
  return {'limit', redis.call('ZCARD', leases)}
end
while true do
  local r
  if inl then
    -- Hosts due move to the rank zset; the best ranked is served.
    for _, d in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, 1000)) do
      redis.call('ZREM', ready, d)
      rankHost(tag, d)
    end
    r = redis.call('ZRANGE', tag..':rank', -1, -1)
    if r[1] then redis.call('ZREM', tag..':rank', r[1]) end
  else
    r = redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, 1)
    if r[1] then redis.call('ZREM', ready, r[1]) end
  end
  if #r == 0 then
    local nr = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
    local nl = redis.call('ZRANGE', leases, 0, 0, 'WITHSCORES')
    return {'wait', nr[2] or '', nl[2] or '', redis.call('ZCARD', ready), redis.call('ZCARD', leases), firstDue()}
  end
  local h = r[1]
  -- A due retry goes first; one not due never holds the queue back.
  local rq = tag..':rq:'..h
  local e
  local due = redis.call('ZRANGEBYSCORE', rq, '-inf', now, 'LIMIT', 0, 1)
  if #due > 0 then
    e = due[1]
    redis.call('ZREM', rq, e)
  else
    e = qpop(tag, inl, h)
    if not e then
      local rd = redis.call('ZRANGE', rq, 0, 0, 'WITHSCORES')
      if rd[2] then redis.call('ZADD', ready, tonumber(rd[2]), h) end
    end
  end
  if e then
    redis.call('HSET', out, h, e)
    redis.call('HSET', tok, h, token)
    redis.call('ZADD', leases, now + ttl, h)
    local served = redis.call('HINCRBY', stats, 'served', 1)
    if inl then redis.call('HSET', tag..':srv', h, served) end
    redis.call('SET', req, h, 'PX', ttl)
    return {'ok', h, e, redis.call('GET', tag..':scopever') or '', redis.call('HGET', tag..':thr', h) or '', firstDue()}
  end
end
`

// stageScript records a completion's candidates under the host's lease.
var stageScript = redis.NewScript(`
local tag = ARGV[1]
if redis.call('HGET', tag..':tok', ARGV[2]) ~= ARGV[3] then return 0 end
redis.call('HSET', tag..':stage', ARGV[2], ARGV[4])
return 1
`)

// doneScript queues the new entries and releases the host's lease (when
// the token still holds it), or, with an empty host, queues seeds once per
// guard key.
//
// ARGV: tag, host, token, now, delay ms, fetched, failed, dup, guard,
// retry record ("" for none), its due time (ms), the host's new throttle
// in ms ("" to leave it, 0 to drop it), whether the answer was throttling
// ("1"), whether the request got a response ("1"), the schedule section
// (ARGV[15..18]: ” for none, 'd' to drop the URL ARGV[16] from the
// schedule, 's' to schedule it due at ARGV[17] ms with the visit record
// ARGV[18]; schedule.go), then pairs of (host,
// entry). An entry that ended failed without
// a retry leaves its record in the failed hash (see RetryFailed). A retry
// record waits in the host's
// retry set (rq:<host>, scored by due time) and makes the host ready when
// due if its queue is empty. A host's throttle lives in the thr hash.
var doneScript = redis.NewScript(orderLua + `
local tag = ARGV[1]
local h = ARGV[2]
local now = tonumber(ARGV[4])
local ready, leases, tok, out, stg, stats, nxt =
  tag..':ready', tag..':leases', tag..':tok', tag..':out', tag..':stage', tag..':stats', tag..':next'
if h ~= '' then
  if redis.call('HGET', tok, h) ~= ARGV[3] then return 0 end
elseif redis.call('SET', ARGV[9], '1', 'NX') == false then
  return 0
end
local members, counts, first, chunk = nil, nil, 22, nil
if inl then members, counts, first, chunk = countLinks(tag, 19) end
local n = 0
if inl then n = enqueueAll(tag, h, now, first, members, counts, chunk) end
for i = first, #ARGV, 2 do
  if inl then break end
  local ah, ae = ARGV[i], ARGV[i + 1]
  redis.call('RPUSH', tag..':q:'..ah, ae)
  n = n + 1
  if ah ~= h then
    local t = tonumber(redis.call('HGET', nxt, ah) or '0')
    if t < now then t = now end
    -- LT: a host waiting only for a retry becomes ready sooner.
    makeReady(tag, inl, ah, t)
  end
end
redis.call('HINCRBY', stats, 'new', n)
redis.call('HINCRBY', stats, 'dup', tonumber(ARGV[8]))
if h ~= '' then
  -- A URL that ended failed (no retry) leaves its record in the failed
  -- hash, by URL, for RetryFailed and for a seed given again: the time
  -- (ms), a space, the entry.
  local fe = redis.call('HGET', out, h)
  if fe and ARGV[7] == '1' and ARGV[10] == '' then
    local ok, rec = pcall(cjson.decode, fe)
    if ok and type(rec) == 'table' and type(rec.u) == 'string' then redis.call('HSET', tag..':failed', rec.u, ARGV[4] .. ' ' .. fe) end
  end
  redis.call('HDEL', out, h)
  redis.call('HDEL', tok, h)
  redis.call('HDEL', stg, h)
  redis.call('ZREM', leases, h)
  redis.call('DEL', tag..':n:'..ARGV[3])
  local t = now
  if ARGV[6] == '1' then
    t = now + tonumber(ARGV[5])
    redis.call('HSET', nxt, h, t)
    redis.call('HINCRBY', stats, 'pages', 1)
  end
  if ARGV[7] == '1' then redis.call('HINCRBY', stats, 'errors', 1) end
  redis.call('HINCRBY', stats, 'done', 1)
  if ARGV[12] ~= '' then
    local v = tonumber(ARGV[12])
    if v > 0 then
      if redis.call('HSETNX', tag..':thr', h, v) == 1 then
        redis.call('HINCRBY', stats, 'slowed', 1)
      else
        redis.call('HSET', tag..':thr', h, v)
      end
    else
      redis.call('HDEL', tag..':thr', h)
    end
  end
  if ARGV[13] == '1' then redis.call('HINCRBY', stats, 'throttled', 1) end
  if ARGV[14] == '1' then redis.call('HINCRBY', stats, 'responses', 1) end
  -- The schedule changes with the completion: the URL is leased until
  -- here, scheduled (or dropped) from here on.
  if ARGV[15] == 's' then
    redis.call('ZADD', tag..':due', tonumber(ARGV[17]), ARGV[16])
    redis.call('HSET', tag..':sched', ARGV[16], ARGV[18])
  elseif ARGV[15] == 'd' then
    redis.call('ZREM', tag..':due', ARGV[16])
    redis.call('HDEL', tag..':sched', ARGV[16])
  end
  local rq = tag..':rq:'..h
  if ARGV[10] ~= '' then
    redis.call('ZADD', rq, tonumber(ARGV[11]), ARGV[10])
    redis.call('HINCRBY', stats, 'retried', 1)
  end
  local nt = tonumber(redis.call('HGET', nxt, h) or '0')
  if nt > t then t = nt end
  if qlen(tag, inl, h) > 0 then
    redis.call('ZADD', ready, t, h)
  else
    local rd = redis.call('ZRANGE', rq, 0, 0, 'WITHSCORES')
    if rd[2] then redis.call('ZADD', ready, math.max(t, tonumber(rd[2])), h) end
  end
end
return 1
`)

func (f *Frontier) nowMS() int64 { return f.opts.Now().UnixMilli() }

// AddSeeds queues the seeds the seen-set does not hold yet and records
// their host names and domains as the crawl's scope. Every worker of a
// crawl may call it with the same list: the list is queued once (a guard
// key named by a hash of the list), and a worker that died half-way is
// completed by the next caller, which replays the same seen-set batch. A
// seed whose last attempt failed (it has a failure record: see
// RetryFailed) is queued again, by one caller, when the crawl is idle (no
// host ready or leased: a new run of a crawl that ran out of URLs); a
// worker joining a running crawl leaves it. It returns how many seeds
// this call queued.
func (f *Frontier) AddSeeds(ctx context.Context, seeds []string) (int, error) {
	var cands []record
	var hosts, doms []any
	for _, raw := range seeds {
		sd, err := f.adm.ParseSeed(raw)
		if err != nil {
			return 0, fmt.Errorf("redisfrontier: %w", err)
		}
		hosts = append(hosts, sd.Host)
		doms = append(doms, sd.Domain)
		if c, r := f.adm.CheckSeed(sd.URL); r == frontier.Admitted {
			cands = append(cands, record{URL: c.URL})
		}
	}
	if len(seeds) == 0 {
		return 0, nil
	}
	err := f.c.retry(ctx, func(ctx context.Context) error {
		_, err := f.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, f.key("seedhosts"), hosts...)
			p.SAdd(ctx, f.key("seeddomains"), doms...)
			p.Incr(ctx, f.key("scopever"))
			return nil
		})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("redisfrontier: record scope: %w", err)
	}
	if err := f.loadScope(ctx); err != nil {
		return 0, err
	}
	var list strings.Builder
	for _, c := range cands {
		list.WriteString(c.URL)
		list.WriteByte('\n')
	}
	id := "seeds-" + strconv.FormatUint(fnv64(list.String()), 36)
	// A seed given again whose last attempt failed is queued again:
	// before the new seeds, while a finished crawl is still idle.
	again, err := f.requeueFailedSeeds(ctx, cands)
	if err != nil {
		return 0, err
	}
	adds, _, dup, err := f.check(ctx, id, cands)
	if err != nil {
		return again, err
	}
	ok, err := f.commit(ctx, "", "", false, false, 0, dup, f.key("seeded:"+id), stage{}, adds)
	if err != nil || !ok {
		return again, err
	}
	return again + len(adds), nil
}

// check runs the candidates through the seen-set under batch id and
// returns the new ones with their segments and the number of duplicates.
func (f *Frontier) check(ctx context.Context, id string, cands []record) ([]record, [][]string, uint64, error) {
	if len(cands) == 0 {
		return nil, nil, 0, nil
	}
	keys := make([][]string, len(cands))
	for i, c := range cands {
		keys[i] = f.opts.Normalizer.Segments(c.URL)
	}
	present := make([]bool, len(cands))
	if err := f.opts.Seen.TestAndAddBatchID(ctx, id, keys, present); err != nil {
		return nil, nil, 0, err
	}
	var adds []record
	var segs [][]string
	var dup uint64
	for i, c := range cands {
		if present[i] {
			dup++
			continue
		}
		adds = append(adds, c)
		segs = append(segs, keys[i])
	}
	return adds, segs, dup, nil
}

// added reports the discovered URLs this worker queued to the trap
// limits' counts (seeds, with no Via, are not counted).
func (f *Frontier) added(adds []record, segs [][]string) {
	for i, a := range adds {
		if a.Via == "" {
			continue
		}
		u, err := url.Parse(a.URL)
		if err != nil {
			continue // commit refused it
		}
		f.adm.Added(frontier.Candidate{URL: a.URL, Host: strings.ToLower(u.Host), Segments: segs[i], Depth: a.Depth, Redirects: a.Redirects, Via: a.Via})
	}
}

// commit runs doneScript.
func (f *Frontier) commit(ctx context.Context, host, token string, fetched, failed bool, delay time.Duration, dup uint64, guard string, st stage, adds []record) (bool, error) {
	args := []any{f.tag, host, token, f.nowMS(), delay.Milliseconds(), b01(fetched), b01(failed), dup, guard,
		st.Retry, st.RetryDue, st.Throttle, b01(st.Throttled), b01(st.Responded),
		st.SchedOp, st.SchedURL, st.SchedDue, st.SchedVal}
	queue, err := f.queueArgs(st, adds)
	if err != nil {
		return false, err
	}
	args = append(args, queue...)
	var res any
	err = f.c.retry(ctx, func(ctx context.Context) error {
		var err error
		res, err = doneScript.Run(ctx, f.c.rdb, []string{f.key("ready")}, args...).Result()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("redisfrontier: commit: %w", err)
	}
	return replyFlag("done", res)
}

func b01(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Next leases the host that has waited longest among those whose
// politeness delay has passed and hands out the head of its queue,
// blocking until there is one. Before that it reclaims expired leases of
// dead workers: their entries go back to the head of their queues, and a
// completion a dead worker had staged is finished here. It returns
// frontier.ErrExhausted when no host has queued entries and no lease is
// outstanding (never in a continuous frontier: it waits for the
// schedule's earliest due time), frontier.ErrPageLimit when Options.MaxPages entries were
// handed out and no lease is outstanding, or the context's error. Every
// entry handed out must be reported to Done.
func (f *Frontier) Next(ctx context.Context) (frontier.Entry, error) {
	for {
		if err := f.promote(ctx); err != nil {
			return frontier.Entry{}, err
		}
		token := f.opts.Seen.NewBatchID()
		var res any
		err := f.c.retry(ctx, func(ctx context.Context) error {
			var err error
			res, err = nextScript.Run(ctx, f.c.rdb, []string{f.key("ready")},
				f.tag, f.nowMS(), f.opts.Lease.Milliseconds(), token, max(f.opts.MaxPages, 0), b01(f.opts.Continuous)).Result()
			return err
		})
		if err != nil {
			return frontier.Entry{}, fmt.Errorf("redisfrontier: next: %w", err)
		}
		nr, err := decodeNext(res)
		if err != nil {
			return frontier.Entry{}, err
		}
		if f.opts.Continuous && (nr.kind == "ok" || nr.kind == "wait") {
			if nr.hasDue {
				f.nextDue.Store(nr.due)
			} else {
				f.nextDue.Store(noDue)
			}
		}
		switch nr.kind {
		case "ok":
			e, err := decodeRecord(nr.entry)
			if err != nil {
				return frontier.Entry{}, err
			}
			f.mu.Lock()
			f.out[e.URL] = append(f.out[e.URL], lease{host: nr.host, token: token, throttle: nr.throttle})
			stale := f.scopeVer != nr.scopeVer
			f.mu.Unlock()
			if stale {
				// Seeds were added since the scope was read (the
				// entry may be one of them): Done must see them.
				if err := f.loadScope(ctx); err != nil {
					return frontier.Entry{}, err
				}
			}
			return e, nil
		case "stage":
			if err := f.finishStage(ctx, nr.host, token, nr.stage); err != nil {
				return frontier.Entry{}, err
			}
			continue
		case "limit":
			if nr.leased == 0 {
				return frontier.Entry{}, frontier.ErrPageLimit
			}
			if err := sleep(ctx, f.opts.Poll); err != nil {
				return frontier.Entry{}, err
			}
			continue
		default: // "wait"
			// A continuous crawl waits for its schedule; with nothing
			// scheduled either (every URL failed for good or left as
			// gone), nothing will ever be handed out: it ends.
			if nr.ready == 0 && nr.leased == 0 && (!f.opts.Continuous || !nr.hasDue) {
				return frontier.Entry{}, frontier.ErrExhausted
			}
			wait := f.opts.Poll
			now := f.nowMS()
			if nr.hasDue {
				// A continuous crawl waits for its schedule.
				wait = min(wait, time.Duration(nr.due-now)*time.Millisecond)
			}
			if nr.hasReady {
				wait = min(wait, time.Duration(nr.readyAt-now)*time.Millisecond)
			}
			if nr.hasExp {
				wait = min(wait, time.Duration(nr.expiry-now)*time.Millisecond)
			}
			if err := sleep(ctx, max(wait, time.Millisecond)); err != nil {
				return frontier.Entry{}, err
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// finishStage completes a dead worker's staged completion under the lease
// token this worker now holds: the same seen-set batch id gives the same
// answers, so exactly the URLs it found new are queued.
func (f *Frontier) finishStage(ctx context.Context, host, token, blob string) error {
	st, err := decodeStage(blob)
	if err != nil {
		return err
	}
	adds, segs, dup, err := f.check(ctx, st.Batch, st.Cands)
	if err != nil {
		return err
	}
	ok, err := f.commit(ctx, host, token, st.Fetched, st.Failed, time.Duration(st.DelayMS)*time.Millisecond, dup, "", st, adds)
	if ok {
		f.added(adds, segs)
	}
	return err
}

// takeLease removes and returns the oldest lease under which e is out, or
// an error matching frontier.ErrNotOut.
func (f *Frontier) takeLease(e frontier.Entry) (lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ls := f.out[e.URL]
	if len(ls) == 0 {
		return lease{}, fmt.Errorf("%w: %s", frontier.ErrNotOut, e.URL)
	}
	if len(ls) == 1 {
		delete(f.out, e.URL)
	} else {
		f.out[e.URL] = ls[1:]
	}
	return ls[0], nil
}

// Done records the outcome of an entry handed out by Next: its links and
// redirect target are checked and the new ones queued, the host's lease is
// released and the host becomes ready after its politeness delay (across
// all workers). It returns frontier.ErrNotOut (wrapped) for an entry this
// worker does not hold. When the lease expired meanwhile, the entry was
// handed to another worker: Done then queues nothing (the other fetch will
// discover the same links) and returns nil. With out.RetryAt set, the URL
// waits in its host's retry set and is handed out again, as attempt
// e.Attempt+1, once due; the host's other URLs go on meanwhile. In a
// continuous frontier, out.Schedule is stored (or, nil, the URL dropped
// from the schedule) by the script that completes the lease
// (schedule.go); a retry leaves the URL's schedule as it is.
func (f *Frontier) Done(ctx context.Context, e frontier.Entry, out frontier.Outcome) error {
	if f.opts.Continuous {
		if err := checkSchedule(e.URL, out.Schedule); err != nil {
			return err
		}
	}
	l, err := f.takeLease(e)
	if err != nil {
		return err
	}
	// Adaptive politeness, as on one machine: the host's throttle is
	// shared in Redis, and only the worker holding its lease changes it.
	delay, throttle := time.Duration(0), ""
	if out.Fetched {
		var thr time.Duration
		delay, thr = f.opts.Politeness.AdaptiveDelay(l.throttle, out)
		if thr != l.throttle {
			throttle = strconv.FormatInt(thr.Milliseconds(), 10)
		}
	}
	var cands []record
	var counted []int
	inBatch := map[string]int{} // index in cands
	isCounted := map[int]bool{}
	add := func(c frontier.Candidate, r frontier.Refusal) int {
		if r != frontier.Admitted {
			return -1
		}
		if i, ok := inBatch[c.URL]; ok {
			return i
		}
		inBatch[c.URL] = len(cands)
		cands = append(cands, newRecord(frontier.Entry{URL: c.URL, Depth: c.Depth, Redirects: c.Redirects, Via: c.Via,
			Hops: c.Hops, Sitemap: c.Sitemap, LastMod: c.LastMod}))
		return len(cands) - 1
	}
	// With inlinks a page's links are counted, each once.
	link := func(c frontier.Candidate, r frontier.Refusal) {
		if i := add(c, r); i >= 0 && f.order.order == frontier.OrderInlinks && !isCounted[i] {
			isCounted[i] = true
			counted = append(counted, i)
		}
	}
	if out.Redirect != "" {
		add(f.adm.Redirect(e, out.Redirect))
	}
	if len(out.Links) > 0 || len(out.Embeds) > 0 {
		links := f.adm.Links(e, out.Base)
		for _, ref := range out.Links {
			link(links.Link(ref))
		}
		for _, ref := range out.Embeds {
			link(links.Embed(ref))
		}
	}
	_ = frontier.SitemapCandidates(f.adm, e, out, func(c frontier.Candidate, r frontier.Refusal) error {
		add(c, r)
		return nil
	})
	st := stage{Batch: f.opts.Seen.NewBatchID(), Fetched: out.Fetched, Failed: out.Failed, DelayMS: delay.Milliseconds(), Cands: cands,
		Throttle: throttle, Throttled: out.Fetched && out.Throttled, Responded: out.Responded, Counted: counted}
	if out.RetryAt.IsZero() {
		// A retried fetch keeps the URL's schedule as it is: the retry
		// record holds the URL meanwhile.
		var val string
		st.SchedOp, st.SchedDue, val = f.scheduleArgs(l.host, e, out.Schedule)
		if st.SchedOp != "" {
			st.SchedURL, st.SchedVal = e.URL, []byte(val)
		}
	}
	if !out.RetryAt.IsZero() {
		// The URL comes back from the host's retry set when due, as
		// attempt Attempt+1; the host's other URLs go on meanwhile.
		r := e
		r.Attempt++
		// Rounded up: the script serves it once now, in whole
		// milliseconds, reaches the due time, never before.
		st.Retry, st.RetryDue = encodeRecord(r), (out.RetryAt.UnixNano()+int64(time.Millisecond)-1)/int64(time.Millisecond)
	}
	if len(cands) > 0 {
		blob, _ := json.Marshal(st)
		var res any
		err := f.c.retry(ctx, func(ctx context.Context) error {
			var err error
			res, err = stageScript.Run(ctx, f.c.rdb, []string{f.key("tok")}, f.tag, l.host, l.token, string(blob)).Result()
			return err
		})
		if err != nil {
			return fmt.Errorf("redisfrontier: stage: %w", err)
		}
		staged, err := replyFlag("stage", res)
		if err != nil {
			return err
		}
		if !staged {
			return nil // lease lost: the entry is someone else's now
		}
	}
	adds, segs, dup, err := f.check(ctx, st.Batch, cands)
	if err != nil {
		return err
	}
	queued, err := f.commit(ctx, l.host, l.token, out.Fetched, out.Failed, delay, dup, "", st, adds)
	if queued {
		f.added(adds, segs)
		if st.SchedOp == "s" {
			f.learnDue(st.SchedDue)
		}
	}
	return err
}

// deferScript puts the entry a lease handed out back at the head of its
// host's queue, as it was (its attempt count unchanged), and releases the
// lease with the host not ready before a given time: the host's entries
// wait for a prerequisite. Nothing is counted as done.
//
// ARGV: tag, host, token, until (ms). It returns 0 when the token no
// longer holds the host (the lease expired: the entry is back in the queue
// already, or out to another worker).
var deferScript = redis.NewScript(`
local tag = ARGV[1]
local h = ARGV[2]
local tok, out, stg, leases, nxt, ready = tag..':tok', tag..':out', tag..':stage', tag..':leases', tag..':next', tag..':ready'
if redis.call('HGET', tok, h) ~= ARGV[3] then return 0 end
local e = redis.call('HGET', out, h)
if e then redis.call('LPUSH', tag..':q:'..h, e) end
redis.call('HDEL', out, h)
redis.call('HDEL', tok, h)
redis.call('HDEL', stg, h)
redis.call('ZREM', leases, h)
redis.call('DEL', tag..':n:'..ARGV[3])
local t = tonumber(ARGV[4])
local nt = tonumber(redis.call('HGET', nxt, h) or '0')
if nt > t then t = nt end
redis.call('HSET', nxt, h, t)
redis.call('ZADD', ready, t, h)
redis.call('HINCRBY', tag..':stats', 'deferred', 1)
return 1
`)

// Responses reads the crawl's count of completed entries whose request
// got an HTTP response (Stats.Responses, without the rest of Stats).
func (f *Frontier) Responses(ctx context.Context) (uint64, error) {
	var n uint64
	err := f.c.retry(ctx, func(ctx context.Context) error {
		v, err := f.c.rdb.HGet(ctx, f.key("stats"), "responses").Result()
		switch {
		case err == redis.Nil:
			n = 0
			return nil
		case err != nil:
			return err
		}
		if n, err = strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("%w: stats counter responses is %.40q", ErrCorrupt, v)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("redisfrontier: read responses: %w", err)
	}
	return n, nil
}

// requeueScript queues again URLs that ended failed: for each whose
// failure record it deletes (so that of concurrent calls one queues it),
// it appends the given entry to its host's queue and makes the host ready
// unless it is leased. ARGV: tag, now (ms), whether to do so only while
// the crawl is idle ("1": no host ready or leased), then triples of
// (host, URL, entry). It returns how many it queued.
var requeueScript = redis.NewScript(orderLua + `
local tag = ARGV[1]
local now = tonumber(ARGV[2])
local failed, ready, leases, nxt = tag..':failed', tag..':ready', tag..':leases', tag..':next'
if ARGV[3] == '1' and (redis.call('ZCARD', ready) > 0 or redis.call('ZCARD', leases) > 0 or redis.call('ZCARD', tag..':rank') > 0) then return 0 end
local n = 0
for i = 4, #ARGV, 3 do
  local h = ARGV[i]
  if redis.call('HDEL', failed, ARGV[i + 1]) == 1 then
    redis.call('RPUSH', tag..':q:'..h, ARGV[i + 2])
    n = n + 1
    local t = tonumber(redis.call('HGET', nxt, h) or '0')
    if t < now then t = now end
    makeReady(tag, inl, h, t)
  end
end
redis.call('HINCRBY', tag..':stats', 'requeuedfailed', n)
return n
`)

// retryFailedBatch bounds the failure records RetryFailed holds in memory
// at once.
const retryFailedBatch = 1000

// RetryFailed queues again every URL whose last attempt failed (one with a
// failure record in Redis), as it was queued (depth, via, hop path) and
// as a first attempt, and returns how many this call queued. It reads the
// records a thousand at a time, each batch queued and its records deleted
// in one script: of workers calling it at once, each URL is queued by
// one.
func (f *Frontier) RetryFailed(ctx context.Context) (int, error) {
	total := 0
	var cursor uint64
	for {
		var kv []string
		err := f.c.retry(ctx, func(ctx context.Context) error {
			var err error
			kv, cursor, err = f.c.rdb.HScan(ctx, f.key("failed"), cursor, "", retryFailedBatch).Result()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("redisfrontier: read failure records: %w", err)
		}
		n, err := f.requeue(ctx, kv, false)
		total += n
		if err != nil || cursor == 0 {
			return total, err
		}
	}
}

// requeue queues again the failed URLs of kv (URL, record pairs, as the
// failed hash holds them); with idle, only while no host is ready or
// leased.
func (f *Frontier) requeue(ctx context.Context, kv []string, idle bool) (int, error) {
	if len(kv) == 0 {
		return 0, nil
	}
	args := []any{f.tag, f.nowMS(), b01(idle)}
	for i := 0; i+1 < len(kv); i += 2 {
		_, e, err := decodeFailed(kv[i+1])
		if err != nil {
			return 0, fmt.Errorf("redisfrontier: failure record of %.60q: %w", kv[i], err)
		}
		u, err := url.Parse(e.URL)
		if err != nil || u.Host == "" || e.URL != kv[i] {
			return 0, fmt.Errorf("%w: failure record of %.60q holds %.60q", ErrCorrupt, kv[i], e.URL)
		}
		e.Attempt = 0
		args = append(args, strings.ToLower(u.Host), kv[i], encodeRecord(e))
	}
	var n int64
	err := f.c.retry(ctx, func(ctx context.Context) error {
		var err error
		n, err = requeueScript.Run(ctx, f.c.rdb, []string{f.key("ready")}, args...).Int64()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("redisfrontier: queue failed URLs again: %w", err)
	}
	return int(n), nil
}

// decodeFailed parses a failure record: when it failed (ms) and the
// entry.
func decodeFailed(v string) (time.Time, frontier.Entry, error) {
	ms, rec, ok := strings.Cut(v, " ")
	at, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return time.Time{}, frontier.Entry{}, fmt.Errorf("%w: failure record %.60q: no time", ErrCorrupt, v)
	}
	e, err := decodeRecord(rec)
	return time.UnixMilli(at), e, err
}

// requeueFailedSeeds queues again the seeds whose last attempt failed
// before this worker's run (Options.Started), if the crawl is idle (a new
// run of a crawl that ran out of URLs): a worker joining a running crawl
// leaves them, and so does one whose seeds failed since it started, so
// that a seed that failed in this run is not tried again because a worker
// got to AddSeeds late.
func (f *Frontier) requeueFailedSeeds(ctx context.Context, cands []record) (int, error) {
	if len(cands) == 0 {
		return 0, nil
	}
	fields := make([]string, len(cands))
	for i, c := range cands {
		fields[i] = c.URL
	}
	var vals []any
	err := f.c.retry(ctx, func(ctx context.Context) error {
		var err error
		vals, err = f.c.rdb.HMGet(ctx, f.key("failed"), fields...).Result()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("redisfrontier: read failure records: %w", err)
	}
	var kv []string
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		at, _, err := decodeFailed(s)
		if err != nil {
			return 0, fmt.Errorf("redisfrontier: failure record of %.60q: %w", fields[i], err)
		}
		if at.Before(f.opts.Started) {
			kv = append(kv, fields[i], s)
		}
	}
	return f.requeue(ctx, kv, true)
}

// Defer puts e, which Next handed out, back at the head of its host's
// queue, untouched (its attempt count too), and hands out none of the
// host's entries before until, on any worker: the host's entries wait for
// a prerequisite of the host, as a robots.txt that does not answer yet
// (RFC 9309 §2.3.1.4 has the crawler treat the site as fully disallowed
// meanwhile), without spending their own retries. It takes the place of
// Done, as frontier.Frontier.Defer does. An entry whose lease expired
// meanwhile is left where the expiry put it.
func (f *Frontier) Defer(ctx context.Context, e frontier.Entry, until time.Time) error {
	l, err := f.takeLease(e)
	if err != nil {
		return err
	}
	// Rounded up, as a retry's due time.
	due := (until.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	err = f.c.retry(ctx, func(ctx context.Context) error {
		return deferScript.Run(ctx, f.c.rdb, []string{f.key("ready")}, f.tag, l.host, l.token, due).Err()
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: defer: %w", err)
	}
	return nil
}

// WorkerStats returns what this worker's checks refused, by reason,
// including the trap limits (Limits): unlike Stats, these counts are not
// shared, each worker counts the links it discovered.
func (f *Frontier) WorkerStats() frontier.AdmissionStats {
	return f.adm.Stats()
}

// Release mirrors frontier.Frontier.Release so that one crawl loop drives
// both frontiers. Here it only checks that e is out: the host stays leased
// until Done, because the lease is what hands a dead worker's entry to
// another worker, so the politeness delay starts at Done rather than at
// Release. Release does no I/O.
func (f *Frontier) Release(e frontier.Entry, fetched bool, crawlDelay time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.out[e.URL]; !ok {
		return fmt.Errorf("%w: %s", frontier.ErrNotOut, e.URL)
	}
	return nil
}

// Stats is a snapshot of a distributed crawl's shared counters.
type Stats struct {
	Queued    int64  // entries in the host queues (not counting those out)
	Hosts     int64  // hosts with queued entries or retries and no lease
	Leased    int64  // hosts out to a worker (entries in flight)
	Served    uint64 // entries handed out (re-handed ones count again)
	Done      uint64 // entries completed
	Pages     uint64 // completed entries that reached the host
	Errors    uint64 // completed entries that failed
	New       uint64 // discovered URLs queued
	Dup       uint64 // discovered URLs the seen-set already held
	Requeued  uint64 // entries of expired leases put back
	Reclaimed uint64 // staged completions of expired leases finished by another worker
	Reaped    uint64 // leases of workers whose liveness expired, ended early by another worker's Beat
	Retried   uint64 // fetches that failed transiently and were kept for a retry (Outcome.RetryAt)
	Responses uint64 // completed entries whose request got an HTTP response (Outcome.Responded)
	Retrying  int64  // retry records waiting in the hosts' retry sets
	// Scheduled counts the URLs in a continuous crawl's schedule (those
	// due and queued again included; schedule.go), Promoted the URLs
	// moved from it into the queues when due.
	Scheduled int64
	Promoted  uint64
	// Adaptive politeness across the workers: hosts whose delay a 429
	// or 503 raised now (Slowed), times a host went from its normal pace
	// to slowed (EverSlowed), and answers that asked to slow down.
	Slowed     int64
	EverSlowed uint64
	Throttled  uint64
	// Holders counts the leased hosts by the id of the worker holding
	// them (Seen.Worker, which starts every lease token). A dead worker's
	// leases stay here until they expire and another worker's Next
	// reclaims them.
	Holders map[string]int
}

// Stats reads the shared counters. Queued is summed over the host queues
// (one LLEN per host with a queue), so it costs a round trip per 1,000
// hosts.
func (f *Frontier) Stats(ctx context.Context) (Stats, error) {
	return readStats(ctx, f.c, f.tag)
}

// ReadStats reads the counters of the crawl with the client's prefix
// without opening a frontier (for crawler status).
func ReadStats(ctx context.Context, c *Client) (Stats, error) {
	return readStats(ctx, c, c.prefix+"f:{"+c.prefix+"f}")
}

func readStats(ctx context.Context, c *Client, tag string) (Stats, error) {
	var st Stats
	err := c.retry(ctx, func(ctx context.Context) error {
		st = Stats{}
		m, err := c.rdb.HGetAll(ctx, tag+":stats").Result()
		if err != nil {
			return err
		}
		var bad error
		u := func(k string) uint64 {
			s, ok := m[k]
			if !ok {
				return 0 // not counted yet
			}
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil && bad == nil {
				bad = fmt.Errorf("%w: stats counter %s is %.40q", ErrCorrupt, k, s)
			}
			return v
		}
		st.Served, st.Done, st.Pages, st.Errors = u("served"), u("done"), u("pages"), u("errors")
		st.New, st.Dup, st.Requeued, st.Reclaimed, st.Reaped = u("new"), u("dup"), u("requeued"), u("reclaimed"), u("reaped")
		st.Retried, st.EverSlowed, st.Throttled, st.Responses = u("retried"), u("slowed"), u("throttled"), u("responses")
		st.Promoted = u("promoted")
		if bad != nil {
			return bad
		}
		if st.Leased, err = c.rdb.ZCard(ctx, tag+":leases").Result(); err != nil {
			return err
		}
		if st.Scheduled, err = scheduledCount(ctx, c, tag); err != nil {
			return err
		}
		if st.Slowed, err = c.rdb.HLen(ctx, tag+":thr").Result(); err != nil {
			return err
		}
		toks, err := c.rdb.HVals(ctx, tag+":tok").Result()
		if err != nil {
			return err
		}
		for _, tok := range toks {
			if st.Holders == nil {
				st.Holders = map[string]int{}
			}
			id, _, _ := strings.Cut(tok, "-")
			st.Holders[id]++
		}
		if st.Hosts, err = c.rdb.ZCard(ctx, tag+":ready").Result(); err != nil {
			return err
		}
		ranked, err := c.rdb.ZCard(ctx, tag+":rank").Result() // inlinks: hosts ready now
		if err != nil {
			return err
		}
		st.Hosts += ranked
		var hosts []string
		for _, set := range []string{":ready", ":rank", ":leases"} {
			h, err := c.rdb.ZRange(ctx, tag+set, 0, -1).Result()
			if err != nil {
				return err
			}
			hosts = append(hosts, h...)
		}
		for len(hosts) > 0 {
			n := min(len(hosts), 1000)
			cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, h := range hosts[:n] {
					p.LLen(ctx, tag+":q:"+h)
					p.ZCard(ctx, tag+":zq:"+h) // inlinks
					p.ZCard(ctx, tag+":rq:"+h)
				}
				return nil
			})
			if err != nil {
				return err
			}
			for i, cmd := range cmds {
				if i%3 < 2 {
					st.Queued += cmd.(*redis.IntCmd).Val()
				} else {
					st.Retrying += cmd.(*redis.IntCmd).Val()
				}
			}
			hosts = hosts[n:]
		}
		return nil
	})
	if err != nil {
		return Stats{}, fmt.Errorf("redisfrontier: stats: %w", err)
	}
	return st, nil
}
