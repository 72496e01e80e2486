package frontier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ErrCorrupt is matched by every *CorruptError.
var ErrCorrupt = errors.New("frontier: corrupt state")

// CorruptError reports a store record that cannot be decoded.
type CorruptError struct {
	Key    string // the store key of the record
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("frontier: corrupt state at key %q: %s", e.Key, e.Reason)
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Store key layout. Every key starts with a one-letter table name and '/'.
//
//	q/<host>\x00<seq:8 big-endian>  queued entry (encodeEntry)
//	r/<host>\x00<seq:8 big-endian>  retry record (encodeEntry; see retry.go)
//	h/<host>                        number of queued entries of the host (uvarint)
//	j/<seq:8>                       journal: canonical URL inserted into the seen-set
//	s/<hostname>                    seed host name (scope); value empty
//	d/<domain>                      seed registrable domain (scope); value empty
//	m/state                         counters (encodeState)
//	m/exact                         present when Options.ExactDedup is on; value empty
//	f/<fingerprint:8 big-endian>    Options.ExactDedup: a queued URL's fingerprint; value empty (loaded into memory at Open)
//	e/<host>\x00<url>               failure record of a URL whose last attempt failed (encodeEntry; see failed.go)
const (
	prefixQueue   = "q/"
	prefixHost    = "h/"
	prefixJournal = "j/"
	prefixSeed    = "s/"
	prefixDomain  = "d/"
	keyState      = "m/state"
)

// entryVersion is the first byte of an encoded queue entry; retryVersion
// that of a retry record, which also holds the attempt count and the due
// time. Version 1 (no hop path, sitemap flag or lastmod) is still read: a
// queue written before hop paths resumes.
const (
	entryVersion1 = 1
	entryVersion  = 2
	retryVersion  = 3
)

// maxLastMod bounds a decoded lastmod (Unix seconds, about 35,000 years
// either way) so that every accepted value survives time.Unix unchanged.
const maxLastMod = 1 << 40

// Entry flags of versions 2 and 3.
const flagSitemap = 1

// maxFieldLen bounds a decoded string so that a corrupt length cannot ask
// for gigabytes.
const maxFieldLen = 1 << 20

func queueKey(host string, seq uint64) []byte { return hostSeqKey(prefixQueue, host, seq) }

// hostSeqKey is the key of a host's record seq in a table: prefix, host, a
// 0 byte and seq big-endian, so that a host's records sort by seq.
func hostSeqKey(prefix, host string, seq uint64) []byte {
	k := make([]byte, 0, len(prefix)+len(host)+1+8)
	k = append(k, prefix...)
	k = append(k, host...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// queueRange returns the key range [start, end) of a host's entries with a
// sequence number of at least from.
func queueRange(host string, from uint64) (start, end []byte) {
	start = queueKey(host, from)
	end = make([]byte, 0, len(prefixQueue)+len(host)+1)
	end = append(end, prefixQueue...)
	end = append(end, host...)
	end = append(end, 1)
	return start, end
}

// parseQueueKey returns the sequence number in a queue key of host.
func parseQueueKey(key []byte, host string) (uint64, error) {
	want := len(prefixQueue) + len(host) + 1 + 8
	if len(key) != want || string(key[:len(prefixQueue)]) != prefixQueue || string(key[len(prefixQueue):len(prefixQueue)+len(host)]) != host || key[want-9] != 0 {
		return 0, &CorruptError{Key: string(key), Reason: "malformed queue key"}
	}
	return binary.BigEndian.Uint64(key[want-8:]), nil
}

func journalKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefixJournal), seq)
}

// encodeEntry appends the store value of e: version, depth, redirect hops,
// for a retry record the attempt count and due time (Unix nanoseconds),
// URL, via, the hop path, flags and lastmod (Unix seconds, 0 for none).
func encodeEntry(e *Entry) []byte {
	b := make([]byte, 0, 1+7*binary.MaxVarintLen64+len(e.URL)+len(e.Via)+len(e.Hops))
	if e.retry {
		b = append(b, retryVersion)
	} else {
		b = append(b, entryVersion)
	}
	b = binary.AppendUvarint(b, uint64(e.Depth))
	b = binary.AppendUvarint(b, uint64(e.Redirects))
	if e.retry {
		b = binary.AppendUvarint(b, uint64(e.Attempt))
		b = binary.AppendVarint(b, e.due.UnixNano())
	}
	b = appendString(b, e.URL)
	b = appendString(b, e.Via)
	b = appendString(b, e.Hops)
	var flags uint64
	if e.Sitemap {
		flags |= flagSitemap
	}
	b = binary.AppendUvarint(b, flags)
	var lastmod int64
	if !e.LastMod.IsZero() {
		lastmod = e.LastMod.Unix()
	}
	return binary.AppendVarint(b, lastmod)
}

// decodeEntry parses a value written by encodeEntry. key is for errors only.
func decodeEntry(key, b []byte) (Entry, error) {
	var e Entry
	bad := func(reason string) (Entry, error) {
		return Entry{}, &CorruptError{Key: string(key), Reason: reason}
	}
	if len(b) == 0 {
		return bad("empty entry")
	}
	version := b[0]
	if version != entryVersion && version != entryVersion1 && version != retryVersion {
		return bad(fmt.Sprintf("unknown entry version %d", b[0]))
	}
	e.retry = version == retryVersion
	b = b[1:]
	depth, n := binary.Uvarint(b)
	if n <= 0 || depth > 1<<31 {
		return bad("bad depth")
	}
	b = b[n:]
	redirects, n := binary.Uvarint(b)
	if n <= 0 || redirects > 1<<31 {
		return bad("bad redirect count")
	}
	b = b[n:]
	if e.retry {
		attempt, n := binary.Uvarint(b)
		if n <= 0 || attempt == 0 || attempt > 1<<31 {
			return bad("bad attempt count")
		}
		b = b[n:]
		due, m := binary.Varint(b)
		if m <= 0 || due <= 0 {
			return bad("bad retry time")
		}
		b = b[m:]
		e.Attempt, e.due = int(attempt), time.Unix(0, due)
	}
	var ok bool
	if e.URL, b, ok = readString(b); !ok || e.URL == "" {
		return bad("bad url")
	}
	if e.Via, b, ok = readString(b); !ok {
		return bad("bad via")
	}
	if version != entryVersion1 {
		if e.Hops, b, ok = readString(b); !ok || len(e.Hops) > MaxHopPath {
			return bad("bad hop path")
		}
		flags, n := binary.Uvarint(b)
		if n <= 0 || flags&^flagSitemap != 0 {
			return bad("bad flags")
		}
		e.Sitemap = flags&flagSitemap != 0
		b = b[n:]
		lastmod, n := binary.Varint(b)
		if n <= 0 || lastmod < -maxLastMod || lastmod > maxLastMod {
			return bad("bad lastmod")
		}
		b = b[n:]
		if lastmod != 0 {
			e.LastMod = time.Unix(lastmod, 0).UTC()
		}
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	e.Depth, e.Redirects = int(depth), int(redirects)
	return e, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readString(b []byte) (string, []byte, bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > maxFieldLen || l > uint64(len(b)-n) {
		return "", nil, false
	}
	b = b[n:]
	return string(b[:l]), b[l:], true
}

// state holds the frontier's counters, rewritten in every batch.
type state struct {
	nextSeq    uint64 // sequence number of the next queued entry
	pages      uint64 // completed entries that reached the host
	errors     uint64 // completed entries that failed
	checkpoint uint64 // generation of the last seen-set checkpoint, 0 if none
}

const stateVersion = 1

func encodeState(s *state) []byte {
	b := []byte{stateVersion}
	b = binary.AppendUvarint(b, s.nextSeq)
	b = binary.AppendUvarint(b, s.pages)
	b = binary.AppendUvarint(b, s.errors)
	b = binary.AppendUvarint(b, s.checkpoint)
	return b
}

func decodeState(b []byte) (state, error) {
	bad := func(reason string) (state, error) {
		return state{}, &CorruptError{Key: keyState, Reason: reason}
	}
	if len(b) == 0 || b[0] != stateVersion {
		return bad("unknown state version")
	}
	b = b[1:]
	var v [4]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return bad("truncated state")
		}
		v[i], b = x, b[n:]
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	return state{nextSeq: v[0], pages: v[1], errors: v[2], checkpoint: v[3]}, nil
}

func decodeCount(key, b []byte) (int64, error) {
	x, n := binary.Uvarint(b)
	if n <= 0 || n != len(b) || x > 1<<62 {
		return 0, &CorruptError{Key: string(key), Reason: "bad host count"}
	}
	return int64(x), nil
}
