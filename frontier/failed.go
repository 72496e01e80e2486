package frontier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Failure records. An entry that completes as failed (Outcome.Failed,
// without a retry) leaves a failure record under its host and URL, written
// in the batch that takes it out of the queue, so that the URLs that ended
// failed can be found again without reading the crawl log: a seed given
// again to AddSeeds whose record exists is queued again, and RetryFailed
// queues them all. Queuing a URL again deletes its record in the same
// batch; a new failure writes a new one.

// prefixFailed starts the keys of failure records:
//
//	e/<host>\x00<url>  failure record (encodeEntry, version 2)
const prefixFailed = "e/"

func failedKey(host, url string) []byte {
	k := make([]byte, 0, len(prefixFailed)+len(host)+1+len(url))
	k = append(k, prefixFailed...)
	k = append(k, host...)
	k = append(k, 0)
	return append(k, url...)
}

// parseFailedKey returns the host of a failure key.
func parseFailedKey(key []byte) (host string, err error) {
	if len(key) < len(prefixFailed) || string(key[:len(prefixFailed)]) != prefixFailed {
		return "", &CorruptError{Key: string(key), Reason: "malformed failure key"}
	}
	rest := key[len(prefixFailed):]
	if i := slices.Index(rest, 0); i < 1 || i == len(rest)-1 {
		return "", &CorruptError{Key: string(key), Reason: "malformed failure key"}
	}
	i := slices.Index(rest, 0)
	return string(rest[:i]), nil
}

// failedRecord is the record of a failed entry: the entry as it was first
// queued (no attempt count, no due time).
func failedRecord(e *Entry) []byte {
	r := *e
	r.retry, r.Attempt, r.due = false, 0, time.Time{}
	return encodeEntry(&r)
}

// loadFailed reads the failure record of url on host, if any.
func (f *Frontier) loadFailed(host, url string) (Entry, bool, error) {
	k := failedKey(host, url)
	v, err := f.opts.Store.Get(k)
	if errors.Is(err, ErrNotFound) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("frontier: read failure record: %w", err)
	}
	e, err := decodeEntry(k, v)
	if err != nil {
		return Entry{}, false, err
	}
	e.host = host
	return e, true, nil
}

// retryFailedBatch bounds the failure records RetryFailed holds in memory
// at once.
const retryFailedBatch = 1000

// RetryFailed queues again every URL whose last attempt failed (one with a
// failure record), as it was first queued (depth, via, hop path) and as a
// first attempt, and returns how many it queued. It reads the records in
// batches of a thousand, each queued and its records deleted in one
// atomic batch: memory stays bounded however many URLs failed.
func (f *Frontier) RetryFailed(ctx context.Context) (int, error) {
	total := 0
	start, end := []byte(prefixFailed), []byte(prefixFailed)
	end[len(end)-1]++
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var batch []Entry
		var derr error
		err := f.opts.Store.Ascend(start, end, func(k, v []byte) bool {
			host, err := parseFailedKey(k)
			if err != nil {
				derr = err
				return false
			}
			e, err := decodeEntry(k, v)
			if err != nil {
				derr = err
				return false
			}
			e.host = host
			batch = append(batch, e)
			return len(batch) < retryFailedBatch
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return total, fmt.Errorf("frontier: read failure records: %w", err)
		}
		if len(batch) == 0 {
			return total, nil
		}
		if err := f.requeue(batch); err != nil {
			return total, err
		}
		total += len(batch)
	}
}

// requeue queues entries that have failure records again, deleting the
// records, in one batch.
func (f *Frontier) requeue(es []Entry) error {
	defer f.batches.exit(f.batches.enter())
	return f.commit(&op{requeue: es, ch: make(chan struct{})})
}
