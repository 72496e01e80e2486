package crawl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/mlbf"
	"github.com/layercrawl/layercrawl/storage"
)

// PayloadIndex remembers the responses archived in full, by the
// WARC-Payload-Digest of their payload as received (storage.ParseResponse:
// the chunked coding removed, the content coding kept, as other archives
// compare payloads), so that a repeated payload is archived as a WARC
// revisit record. TestAndAdd returns the earlier response of digest (found
// true), or records first as it and returns found false, in one atomic
// step. first.RecordID names the response record that will be written, so
// that a revisit of it carries WARC-Refers-To.
//
// The crawl's index is in its embedded store (local mode) or in Redis,
// and holds the last Options.PayloadDigests digests: an older payload
// seen again is archived in full once more and becomes the new reference.
type PayloadIndex interface {
	TestAndAdd(ctx context.Context, digest string, first storage.Revisit) (earlier storage.Revisit, found bool, err error)
}

// Keys of the payload index in the local store: the digest's record, the
// insertion order (for eviction) and the bounds of that order.
const (
	payloadKeyPrefix   = "x/pd/" // + digest -> seq (8) | date (8, Unix ns) | id length (1) | record id | URI
	payloadOrderPrefix = "x/po/" // + seq (8, big-endian) -> digest
	payloadMetaKey     = "x/pm"  // first seq (8) | next seq (8)
	payloadVersionKey  = "x/pv"  // payloadFormat
	payloadKeySpace    = "x/p"   // every key above starts with it
)

// payloadFormat is the format of the payload index, written with its first
// batch. An index without it was written before the archive held responses
// as received: its digests are of decoded bodies (a gzip'd response's never
// equals its wire digest) and its records lack the record id, so it is
// dropped when the crawl resumes and the index starts afresh (revisits
// then resume as payloads are seen again). A format this code does not
// know is refused.
const payloadFormat = "wire-sha1 v2"

// payloadDropBatch is how many keys of an old-format index are deleted per
// store write.
const payloadDropBatch = 4096

// storePayloads is the PayloadIndex of a local crawl, kept in its store
// beside the frontier (whose keys it does not share), so that it is
// persisted and resumed with it.
//
// Its changes reach the store in batches (payloadBatch digests, and at
// every checkpoint and the crawl's end through flush), not one write per
// response: that write was 4% of a crawl's CPU. Until then they are read
// from memory. A crash loses the unwritten ones, and those payloads, if
// seen again, are archived in full once more: the index only saves space.
type storePayloads struct {
	store frontier.Store
	max   int64 // digests kept; negative: no limit

	mu          sync.Mutex // protects everything below and the index's keys
	first, next uint64     // sequence of the oldest digest kept, and of the next
	// The changes not yet written: keys set (with their values) and keys
	// deleted, each key in at most one of the two.
	set       map[string][]byte
	del       map[string]bool
	unwritten int // digests added since the last write
	// known holds every digest the index held when opened or was given
	// since: a digest it lacks is new, and needs no store lookup (most are
	// new, and an absent key costs pebble a search of every level: 2% of
	// a crawl's CPU). Evicted digests stay in it; their lookups, like its
	// false positives, go to the store.
	known *mlbf.Classic
	// dropped is the number of digests of an old-format index that
	// openStorePayloads deleted; reported once by the crawl's log.
	dropped  int64
	reported bool
	// versioned says the store holds payloadVersionKey.
	versioned bool
}

// payloadFilterRate is the false-positive rate of storePayloads.known at
// its capacity: the fraction of new digests still looked up.
const payloadFilterRate = 0.01

// payloadBatch is how many digests are added before their keys are
// written to the store together (as the next one is added).
const payloadBatch = 64

func openStorePayloads(st frontier.Store, limit int64) (*storePayloads, error) {
	p := &storePayloads{store: st, max: limit, set: make(map[string][]byte), del: make(map[string]bool)}
	v, err := st.Get([]byte(payloadVersionKey))
	switch {
	case err == nil && string(v) == payloadFormat:
		p.versioned = true
	case err == nil:
		return nil, fmt.Errorf("%w: payload index format %q, want %q (written by another version of the crawler)", ErrCorruptState, v, payloadFormat)
	case errors.Is(err, frontier.ErrNotFound):
		if p.dropped, err = dropPayloadIndex(st); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("crawl: payload index: %w", err)
	}
	v, err = st.Get([]byte(payloadMetaKey))
	switch {
	case errors.Is(err, frontier.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("crawl: payload index: %w", err)
	case len(v) != 16:
		return nil, fmt.Errorf("%w: payload index bounds are %d bytes, want 16", ErrCorruptState, len(v))
	default:
		p.first, p.next = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
		if p.first > p.next {
			return nil, fmt.Errorf("%w: payload index bounds %d > %d", ErrCorruptState, p.first, p.next)
		}
	}
	// Room for the digests held and as many again, or for max, which a
	// long crawl's evictions pass; past its capacity the filter lets more
	// new digests through to the store, never fewer.
	held := p.next - p.first
	capacity := max(2*held, uint64(DefaultPayloadDigests))
	if p.max >= 0 {
		capacity = max(2*held, uint64(p.max), 1)
	}
	if p.known, err = mlbf.NewClassicFor(capacity, payloadFilterRate); err != nil {
		return nil, fmt.Errorf("crawl: payload index: %w", err)
	}
	if held > 0 {
		end := []byte(payloadKeyPrefix)
		end[len(end)-1]++
		err := st.Ascend([]byte(payloadKeyPrefix), end, func(key, _ []byte) bool {
			p.known.Add(key[len(payloadKeyPrefix):])
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("crawl: payload index: %w", err)
		}
	}
	return p, nil
}

// dropPayloadIndex deletes an index of the previous format (any key under
// payloadKeySpace, in a store without payloadVersionKey) and returns the
// number of digests it held. A crash midway leaves the rest, without the
// version key, for the next open to delete.
func dropPayloadIndex(st frontier.Store) (int64, error) {
	end := []byte(payloadKeySpace)
	end[len(end)-1]++
	var dropped int64
	for {
		var keys [][]byte
		err := st.Ascend([]byte(payloadKeySpace), end, func(key, _ []byte) bool {
			keys = append(keys, append([]byte(nil), key...))
			return len(keys) < payloadDropBatch
		})
		if err != nil {
			return dropped, fmt.Errorf("crawl: payload index: %w", err)
		}
		if len(keys) == 0 {
			return dropped, nil
		}
		err = st.Write(func(w frontier.Writer) error {
			for _, k := range keys {
				if err := w.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return dropped, fmt.Errorf("crawl: payload index: drop the previous format: %w", err)
		}
		for _, k := range keys {
			if bytes.HasPrefix(k, []byte(payloadKeyPrefix)) {
				dropped++
			}
		}
	}
}

// takeDropped returns, once, the number of digests of an old-format index
// dropped when the index was opened.
func (p *storePayloads) takeDropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reported {
		return 0
	}
	p.reported = true
	return p.dropped
}

// Len returns the number of digests held.
func (p *storePayloads) Len() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(p.next - p.first)
}

// getLocked reads key, unwritten changes first.
func (p *storePayloads) getLocked(key string) ([]byte, error) {
	if v, ok := p.set[key]; ok {
		return v, nil
	}
	if p.del[key] {
		return nil, frontier.ErrNotFound
	}
	return p.store.Get([]byte(key))
}

func (p *storePayloads) setLocked(key string, v []byte) {
	delete(p.del, key)
	p.set[key] = v
}

func (p *storePayloads) deleteLocked(key string) {
	delete(p.set, key)
	p.del[key] = true
}

func (p *storePayloads) TestAndAdd(_ context.Context, digest string, first storage.Revisit) (storage.Revisit, bool, error) {
	key := payloadKeyPrefix + digest
	p.mu.Lock()
	defer p.mu.Unlock()
	v, err := []byte(nil), frontier.ErrNotFound
	if p.known.TestString(digest) {
		v, err = p.getLocked(key)
	}
	if err == nil {
		r, derr := decodePayloadRef(v)
		if derr != nil {
			return storage.Revisit{}, false, fmt.Errorf("%w: payload index %s: %w", ErrCorruptState, digest, derr)
		}
		return r, true, nil
	}
	if !errors.Is(err, frontier.ErrNotFound) {
		return storage.Revisit{}, false, fmt.Errorf("crawl: payload index: %w", err)
	}
	// A full batch is written before this digest is added: if the write
	// fails, the call fails having changed nothing.
	if p.unwritten >= payloadBatch {
		if err := p.flushLocked(); err != nil {
			return storage.Revisit{}, false, err
		}
	}
	seq := p.next
	if p.max >= 0 && int64(p.next-p.first) >= p.max && p.next > p.first {
		evict := string(binary.BigEndian.AppendUint64([]byte(payloadOrderPrefix), p.first))
		evictDigest, err := p.getLocked(evict)
		if err != nil {
			return storage.Revisit{}, false, fmt.Errorf("%w: payload index order %d: %w", ErrCorruptState, p.first, err)
		}
		p.deleteLocked(evict)
		p.deleteLocked(payloadKeyPrefix + string(evictDigest))
		p.first++
	}
	p.setLocked(key, encodePayloadRef(binary.BigEndian.AppendUint64(nil, seq), first))
	p.setLocked(string(binary.BigEndian.AppendUint64([]byte(payloadOrderPrefix), seq)), []byte(digest))
	p.next = seq + 1
	p.unwritten++
	p.known.AddString(digest)
	return storage.Revisit{}, false, nil
}

// flush writes the unwritten changes to the store, in one batch with the
// index's bounds.
func (p *storePayloads) flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flushLocked()
}

func (p *storePayloads) flushLocked() error {
	if len(p.set) == 0 && len(p.del) == 0 {
		return nil
	}
	meta := binary.BigEndian.AppendUint64(nil, p.first)
	meta = binary.BigEndian.AppendUint64(meta, p.next)
	err := p.store.Write(func(w frontier.Writer) error {
		for k := range p.del {
			if err := w.Delete([]byte(k)); err != nil {
				return err
			}
		}
		for k, v := range p.set {
			if err := w.Set([]byte(k), v); err != nil {
				return err
			}
		}
		if !p.versioned {
			if err := w.Set([]byte(payloadVersionKey), []byte(payloadFormat)); err != nil {
				return err
			}
		}
		return w.Set([]byte(payloadMetaKey), meta)
	})
	if err != nil {
		// Kept for the next flush: the changes stay readable here.
		return fmt.Errorf("crawl: payload index: %w", err)
	}
	clear(p.set)
	clear(p.del)
	p.unwritten = 0
	p.versioned = true
	return nil
}

// flushPayloads writes the local payload index's unwritten changes.
func (c *Crawler) flushPayloads() error {
	if p, ok := c.payloads.(*storePayloads); ok {
		return p.flush()
	}
	return nil
}

// encodePayloadRef appends an earlier response's record to its 8 leading
// bytes (the local index's sequence number, zero in Redis): date (8, Unix
// ns) | record id length (1) | record id | target URI.
func encodePayloadRef(dst []byte, r storage.Revisit) []byte {
	id := r.RecordID
	if len(id) > 255 {
		id = "" // not a record id the writer makes; the revisit goes without WARC-Refers-To
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Date.UnixNano()))
	dst = append(dst, byte(len(id)))
	dst = append(dst, id...)
	return append(dst, r.TargetURI...)
}

func decodePayloadRef(v []byte) (storage.Revisit, error) {
	if len(v) < 17 || len(v) < 17+int(v[16]) {
		return storage.Revisit{}, fmt.Errorf("record of %d bytes", len(v))
	}
	n := int(v[16])
	return storage.Revisit{
		Date:      time.Unix(0, int64(binary.BigEndian.Uint64(v[8:16]))).UTC(),
		RecordID:  string(v[17 : 17+n]),
		TargetURI: string(v[17+n:]),
	}, nil
}

// redisPayloads is the PayloadIndex of a Redis-mode crawl, shared by its
// workers: one key per digest and a list of digests in insertion order,
// trimmed to the limit by the same script that adds. The keys are
// PREFIX{payloads}:w:d:<digest> and PREFIX{payloads}:w:order; an index of
// the previous format (PREFIX{payloads}:d:<digest> and
// PREFIX{payloads}:order, digests of decoded bodies) is not read, and the
// same script deletes it, a few keys per call, as the new one grows.
// redisPayloadDropPerCall is how many keys of a previous-format index each
// call deletes: a million-digest index is gone after 62,500 calls.
const redisPayloadDropPerCall = 16

type redisPayloads struct {
	client *redisfrontier.Client
	max    int64
}

// payloadScript: KEYS[1] digest key, KEYS[2] order list, KEYS[3] the order
// list of the previous format; ARGV[1] value, ARGV[2] limit (negative:
// none). Returns the earlier value, or false after adding.
var payloadScript = redis.NewScript(`
for i = 1, ` + strconv.Itoa(redisPayloadDropPerCall) + ` do
  local old = redis.call('LPOP', KEYS[3])
  if not old then break end
  redis.call('DEL', old)
end
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1])
local n = redis.call('RPUSH', KEYS[2], KEYS[1])
local max = tonumber(ARGV[2])
if max >= 0 then
  while n > max do
    local old = redis.call('LPOP', KEYS[2])
    redis.call('DEL', old)
    n = n - 1
  end
end
return false
`)

func (r redisPayloads) TestAndAdd(ctx context.Context, digest string, first storage.Revisit) (storage.Revisit, bool, error) {
	// One hash slot for the index, so that the script's keys may be
	// touched together in a Redis Cluster.
	base := r.client.Prefix() + "{payloads}:"
	val := encodePayloadRef(make([]byte, 8, 17+len(first.RecordID)+len(first.TargetURI)), first)
	// Retried through a Redis restart like the frontier's calls. A
	// repeat of a call that ran returns this response as its own earlier
	// insert, which archiveResponse stores in full.
	var res any
	err := r.client.Retry(ctx, func(ctx context.Context) error {
		var err error
		res, err = payloadScript.Run(ctx, r.client.Redis(), []string{base + "w:d:" + digest, base + "w:order", base + "order"}, val, r.max).Result()
		return err
	})
	switch {
	case errors.Is(err, redis.Nil):
		return storage.Revisit{}, false, nil
	case err != nil:
		return storage.Revisit{}, false, fmt.Errorf("crawl: payload index: %w", err)
	}
	s, ok := res.(string)
	if !ok {
		return storage.Revisit{}, false, fmt.Errorf("crawl: payload index: reply %T", res)
	}
	ref, err := decodePayloadRef([]byte(s))
	if err != nil {
		return storage.Revisit{}, false, fmt.Errorf("crawl: payload index %s: %w", digest, err)
	}
	return ref, true, nil
}
