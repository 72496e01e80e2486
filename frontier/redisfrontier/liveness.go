package redisfrontier

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Worker liveness. A lease alone hands a dead
// worker's host to another worker only when it expires, and a lease must
// outlast the slowest fetch (2 minutes by default): a killed worker left
// its hosts idle that long. So every worker also beats: it renews a
// liveness key that expires after a few beats, and on each beat it looks
// for workers whose key expired and expires their leases at once. The
// next Next of any worker then reclaims those hosts through the usual path
// (requeueing the entry, or finishing a staged completion), so a dead
// worker's hosts are back within about the liveness TTL plus one beat,
// however long the lease.
//
// A worker presumed dead that is in fact alive (a long GC pause, SIGSTOP,
// a network partition) is fenced by its lease tokens: once another worker
// has reclaimed a host, the late worker's Done for it finds another token,
// queues nothing and returns nil, so each entry it held is fetched at most
// once more, by the worker that reclaimed it. Its later beats make it a
// live worker again.

// Heartbeat is what a worker reports on each beat, for people reading the
// crawl's status.
type Heartbeat struct {
	Name     string // the worker's name (host and process id)
	Pages    uint64 // fetches it completed in this run
	InFlight int    // entries it holds now
}

// WorkerInfo describes a worker of the crawl from its last beat.
type WorkerInfo struct {
	ID       string    `json:"id"`   // lease id (Seen.Worker), which starts its lease tokens
	Name     string    `json:"name"` // from its Heartbeat
	Pages    uint64    `json:"pages"`
	InFlight int       `json:"in_flight"`
	At       time.Time `json:"at"`    // its last beat (its own clock)
	Alive    bool      `json:"alive"` // its liveness key has not expired
}

// beatInfo is the JSON of a worker's entry in the workers hash.
type beatInfo struct {
	Name     string `json:"n"`
	Pages    uint64 `json:"p"`
	InFlight int    `json:"i"`
	AtMS     int64  `json:"t"`
}

// beatScript renews a worker's liveness and expires the leases of the
// workers whose liveness ran out. A worker counts as gone only when Redis
// itself expired its liveness key, so clocks that disagree cannot make a
// live worker look dead; the beats sorted set (last beat times) only
// bounds which workers are looked at.
//
// An outage (Redis down, or the links to it cut) stops every worker's
// beats, and their liveness keys expire by the clock meanwhile, the live
// workers' too: Redis expiry is wall-clock time, kept across a restart.
// So a key that expired is not proof of death by itself. It is once the
// worker judging it has itself been connected for a grace period without
// a break: a live worker cut off by the same outage beats again within
// the grace once Redis answers (its beat retries every ttl/30 at most, and
// go-redis redials every second), a dead one does not. A worker whose
// link broke since its last beat (broke = 1: it saw a call fail, or its
// own key had expired) restarts its grace (since:<id>), and reaps nothing
// until now - since >= grace. The time before the outage still counts:
// a worker that died before the outage is reaped one grace after the
// survivors are back, not one liveness after.
//
// ARGV: tag, worker id, now ms, liveness TTL ms, info JSON, broke (0/1),
// grace ms.
var beatScript = redis.NewScript(`
local tag, id, now, ttl, info = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local broke, grace = ARGV[6] == '1', tonumber(ARGV[7])
local beats, leases = tag..':beats', tag..':leases'
local since = tag..':since:'..id
if broke or redis.call('EXISTS', tag..':alive:'..id) == 0 then
  redis.call('SET', since, now, 'PX', 4 * ttl)
end
redis.call('SET', tag..':alive:'..id, '1', 'PX', ttl)
redis.call('HSET', tag..':workers', id, info)
redis.call('ZADD', beats, now, id)
if now - tonumber(redis.call('GET', since) or '0') < grace then return 0 end
local late = redis.call('ZRANGEBYSCORE', beats, '-inf', now - ttl, 'LIMIT', 0, 100)
local gone, any = {}, false
for _, w in ipairs(late) do
  if redis.call('EXISTS', tag..':alive:'..w) == 0 then
    gone[w..'-'] = true
    any = true
    redis.call('ZREM', beats, w)
  end
end
if not any then return 0 end
local n = 0
local toks = redis.call('HGETALL', tag..':tok')
for i = 1, #toks, 2 do
  local t = toks[i + 1]
  local p = string.find(t, '-', 1, true)
  if p and gone[string.sub(t, 1, p)] then
    redis.call('ZADD', leases, 'XX', now, toks[i])
    n = n + 1
  end
end
redis.call('HINCRBY', tag..':stats', 'reaped', n)
return n
`)

// ReapGrace is how long a worker must have been connected to Redis
// without a break before its beats reap anyone: ttl/3 for a liveness of
// ttl. It bounds how late a live worker cut off by an outage may beat
// again once Redis answers.
func ReapGrace(ttl time.Duration) time.Duration { return ttl / 3 }

// Beat renews this worker's liveness for ttl (a few beat intervals) and
// expires the leases of every worker whose liveness ran out, so that any
// worker's next Next reclaims their hosts. It returns how many leases it
// expired. Call it every interval of at most ttl/3 for as long as the
// worker runs, and Leave when it stops. A worker reaps nothing until it
// has been connected without a break for ReapGrace(ttl): after its start,
// and after any failed call of its Client (an outage). So a worker that
// died is reaped ttl after its last beat, or ReapGrace(ttl) after the
// survivors are back from an outage, whichever is later. The caller's
// beat should give up after ttl; while Redis is unreachable Beat retries
// every ttl/30 at most, so that it beats again soon after Redis answers.
func (f *Frontier) Beat(ctx context.Context, hb Heartbeat, ttl time.Duration) (int, error) {
	if ttl < 2*time.Millisecond {
		return 0, fmt.Errorf("%w: liveness TTL %v", ErrInvalidOptions, ttl)
	}
	info, _ := json.Marshal(beatInfo{Name: hb.Name, Pages: hb.Pages, InFlight: hb.InFlight, AtMS: f.nowMS()})
	var n int64
	err := f.c.retryCap(ctx, max(f.c.minB, ttl/30), func(ctx context.Context) error {
		fails := f.c.Failures()
		f.mu.Lock()
		broke := !f.beaten || fails != f.beatFails
		f.mu.Unlock()
		var err error
		n, err = beatScript.Run(ctx, f.c.rdb, []string{f.key("beats")},
			f.tag, f.opts.Seen.Worker(), f.nowMS(), ttl.Milliseconds(), string(info), b01(broke), ReapGrace(ttl).Milliseconds()).Int64()
		if err == nil {
			f.mu.Lock()
			f.beaten, f.beatFails = true, fails
			f.mu.Unlock()
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("redisfrontier: beat: %w", err)
	}
	return int(n), nil
}

// Leave removes this worker's liveness and its line in the workers list:
// a worker that stops cleanly holds no lease (Done released them all).
func (f *Frontier) Leave(ctx context.Context) error {
	id := f.opts.Seen.Worker()
	err := f.c.retry(ctx, func(ctx context.Context) error {
		_, err := f.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, f.key("alive:"+id), f.key("since:"+id))
			p.ZRem(ctx, f.key("beats"), id)
			p.HDel(ctx, f.key("workers"), id)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("redisfrontier: leave: %w", err)
	}
	return nil
}

// InFlight returns how many entries this worker holds.
func (f *Frontier) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, ls := range f.out {
		n += len(ls)
	}
	return n
}

// maxWorkers bounds the workers ReadWorkers returns: those of a crawl
// whose workers keep crashing are not all worth a status line.
const maxWorkers = 1000

// ReadWorkers returns the workers of the crawl with the client's prefix
// that have beaten and not left, live ones first, then by id; at most
// 1,000. A worker that died stays listed, not alive, with its last beat.
func ReadWorkers(ctx context.Context, c *Client) ([]WorkerInfo, error) {
	return readWorkers(ctx, c, c.prefix+"f:{"+c.prefix+"f}")
}

// Workers is ReadWorkers for this frontier's crawl.
func (f *Frontier) Workers(ctx context.Context) ([]WorkerInfo, error) {
	return readWorkers(ctx, f.c, f.tag)
}

func readWorkers(ctx context.Context, c *Client, tag string) ([]WorkerInfo, error) {
	var ws []WorkerInfo
	err := c.retry(ctx, func(ctx context.Context) error {
		ws = ws[:0]
		m, err := c.rdb.HGetAll(ctx, tag+":workers").Result()
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		ids = ids[:min(len(ids), maxWorkers)]
		cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids {
				p.Exists(ctx, tag+":alive:"+id)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, id := range ids {
			var b beatInfo
			if err := json.Unmarshal([]byte(m[id]), &b); err != nil {
				return fmt.Errorf("%w: worker %.40q: %w", ErrCorrupt, id, err)
			}
			ws = append(ws, WorkerInfo{ID: id, Name: b.Name, Pages: b.Pages, InFlight: b.InFlight,
				At: time.UnixMilli(b.AtMS).UTC(), Alive: cmds[i].(*redis.IntCmd).Val() == 1})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisfrontier: workers: %w", err)
	}
	slices.SortStableFunc(ws, func(a, b WorkerInfo) int {
		if a.Alive != b.Alive {
			if a.Alive {
				return -1
			}
			return 1
		}
		return 0
	})
	return ws, nil
}
