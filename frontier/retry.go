package frontier

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// Retries. A URL whose fetch failed transiently (Outcome.RetryAt) leaves
// the host's queue and becomes a retry record of the same host, under its
// own key (prefixRetry) with its attempt count and due time, written in the
// same batch that deletes the queue entry: a crash or a resume keeps it.
// Memory holds every waiting retry of a host, by due time, beside the
// window of its queue. A host with a due retry serves it before its queue;
// a host whose queue is empty waits for its first retry; a retry that is
// not due never holds the host's queue back.

// prefixRetry starts the keys of retry records:
//
//	r/<host>\x00<seq:8 big-endian>  retry record (encodeEntry, version 2)
const prefixRetry = "r/"

func retryKey(host string, seq uint64) []byte { return hostSeqKey(prefixRetry, host, seq) }

// parseRetryKey splits a retry key into its host and sequence number.
func parseRetryKey(key []byte) (host string, seq uint64, err error) {
	if len(key) < len(prefixRetry) || string(key[:len(prefixRetry)]) != prefixRetry {
		return "", 0, &CorruptError{Key: string(key), Reason: "malformed retry key"}
	}
	rest := key[len(prefixRetry):]
	if len(rest) < 1+1+8 || rest[len(rest)-9] != 0 { // a host, a 0 byte, the seq
		return "", 0, &CorruptError{Key: string(key), Reason: "malformed retry key"}
	}
	return string(rest[:len(rest)-9]), binary.BigEndian.Uint64(rest[len(rest)-8:]), nil
}

// loadRetry reads one retry record at Open.
func (f *Frontier) loadRetry(k, v []byte) error {
	name, seq, err := parseRetryKey(k)
	if err != nil {
		return err
	}
	e, err := decodeEntry(k, v)
	if err != nil {
		return err
	}
	if !e.retry {
		return &CorruptError{Key: string(k), Reason: "retry record without a due time"}
	}
	if seq == 0 || seq >= f.st.nextSeq {
		return &CorruptError{Key: string(k), Reason: "retry sequence number out of range"}
	}
	e.host, e.seq = name, seq
	f.addRetryLocked(f.hostLocked(name), e)
	f.scheduleLocked(f.hosts[name])
	return nil
}

// addRetryLocked records a committed retry record of h; the caller
// reschedules h.
func (f *Frontier) addRetryLocked(h *host, e Entry) {
	i, _ := slices.BinarySearchFunc(h.retries, e.due, func(r Entry, due time.Time) int {
		if r.due.After(due) {
			return 1
		}
		return -1 // equal due times keep their order of arrival
	})
	h.retries = slices.Insert(h.retries, i, e)
	h.nRetry++
	f.retrying++
}

// popRetryLocked hands out h's first retry, which is due.
func (f *Frontier) popRetryLocked(h *host) Entry {
	e := h.retries[0]
	h.retries[0] = Entry{}
	h.retries = h.retries[1:]
	if len(h.retries) == 0 {
		h.retries = nil
	}
	h.inflight = true
	h.outRetry = true
	h.out = e.seq
	f.inflight++
	f.unreadyLocked(h)
	return e
}

// at is when h may next hand out an entry: when its politeness delay ends
// if its queue has an entry, otherwise when its first retry is due too.
func (h *host) at() time.Time {
	if h.queued-int64(h.pending) > 0 || len(h.retries) == 0 {
		return h.readyAt
	}
	if due := h.retries[0].due; due.After(h.readyAt) {
		return due
	}
	return h.readyAt
}

// idle reports whether h holds nothing: no queued entry, no retry, none out
// and none completing; its record may go once its delay has passed.
func (h *host) idle() bool {
	return h.queued == 0 && h.nRetry == 0 && !h.inflight && h.pending == 0
}

// Defer puts e, which Next handed out, back where it was, untouched: at
// the head of its host's queue, or among the host's retries with its
// attempt count unchanged. Nothing is written to the store, and the host
// hands out nothing before until: its entries wait for a prerequisite of
// the host, as a robots.txt that does not answer yet (RFC 9309 §2.3.1.4
// has the crawler treat the site as fully disallowed meanwhile), without
// spending their own retries. Defer takes the place of Done; an entry
// released before (Release) may still be deferred. The wait is not
// saved: a resumed crawl hands the host's entries out at once.
func (f *Frontier) Defer(e Entry, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return f.broken
	}
	h := f.hosts[e.host]
	if _, released := f.released[e.seq]; !released {
		if e.seq == 0 || h == nil || !h.inflight || h.out != e.seq {
			return fmt.Errorf("%w: %s", ErrNotOut, e.URL)
		}
		f.releaseLocked(h, e.seq, Outcome{})
	} else if h == nil {
		return fmt.Errorf("%w: %s", ErrNotOut, e.URL)
	}
	fetched := f.released[e.seq]
	delete(f.released, e.seq)
	if fetched {
		f.completing--
	}
	if e.retry {
		// Still counted in h.nRetry and f.retrying: only Done's batch
		// takes a retry record away.
		i, _ := slices.BinarySearchFunc(h.retries, e.due, func(r Entry, due time.Time) int {
			if r.due.After(due) {
				return 1
			}
			return -1
		})
		h.retries = slices.Insert(h.retries, i, e)
	} else {
		h.pending--
		if f.counts != nil {
			// Its rank was the best when it was taken; it keeps it.
			f.placeLocked(h, e)
		} else {
			h.window = slices.Insert(h.window, 0, e)
		}
		f.mem++
	}
	if until.After(h.readyAt) {
		h.readyAt = until
	}
	f.scheduleLocked(h)
	f.wakeLocked()
	return nil
}
