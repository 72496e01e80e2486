package redisfrontier

import (
	"fmt"
	"strconv"
	"time"
)

// reply gives typed access to the elements of a script's array reply.
// Every accessor checks the index and the element's type, so that a reply
// of another shape is an error wrapping ErrCorrupt and never reads as a
// zero value. (With `n, _ := res[3].(int64)`, a malformed "wait" reply of
// nextScript read as "no host ready, no lease out", and so as
// frontier.ErrExhausted: a crawl that ends cleanly with URLs still queued.)
//
// The first mismatch is kept and later accessors return zero values, so a
// decoder reads all its fields and checks Err once, as with bufio.Scanner.
type reply struct {
	script string // for errors
	v      []any
	err    error
}

// newReply wraps v, the reply of the named script, which must be an array
// of exactly n elements.
func newReply(script string, v any, n int) *reply {
	r := &reply{script: script}
	s, ok := v.([]any)
	switch {
	case !ok:
		r.err = fmt.Errorf("%w: %s replied %s, want an array", ErrCorrupt, script, describeReply(v))
	case len(s) != n:
		r.err = fmt.Errorf("%w: %s replied %d elements, want %d", ErrCorrupt, script, len(s), n)
	default:
		r.v = s
	}
	return r
}

// Err returns the first shape error met, or nil.
func (r *reply) Err() error { return r.err }

func (r *reply) elem(i int) (any, bool) {
	if r.err != nil {
		return nil, false
	}
	if i >= len(r.v) {
		r.err = fmt.Errorf("%w: %s reply has no element %d", ErrCorrupt, r.script, i)
		return nil, false
	}
	return r.v[i], true
}

func (r *reply) mismatch(i int, v any, want string) {
	r.err = fmt.Errorf("%w: %s reply element %d is %s, want %s", ErrCorrupt, r.script, i, describeReply(v), want)
}

// str returns element i, which must be a string (a bulk or status reply).
func (r *reply) str(i int) string {
	v, ok := r.elem(i)
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.mismatch(i, v, "a string")
	}
	return s
}

// int returns element i, which must be an integer reply.
func (r *reply) int(i int) int64 {
	v, ok := r.elem(i)
	if !ok {
		return 0
	}
	n, ok := v.(int64)
	if !ok {
		r.mismatch(i, v, "an integer")
	}
	return n
}

// millis returns element i, a string holding a sorted-set score in
// milliseconds, or ok false when it is empty (no such member).
func (r *reply) millis(i int) (ms int64, ok bool) {
	s := r.str(i)
	if r.err != nil || s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		r.err = fmt.Errorf("%w: %s reply element %d is %q, want a time in milliseconds", ErrCorrupt, r.script, i, s)
		return 0, false
	}
	return int64(f), true
}

// replyFlag reads the reply of a script that answers 1 (done) or 0 (not
// done: the caller's lease is gone).
func replyFlag(script string, v any) (bool, error) {
	switch v {
	case int64(1):
		return true, nil
	case int64(0):
		return false, nil
	}
	return false, fmt.Errorf("%w: %s replied %s, want 0 or 1", ErrCorrupt, script, describeReply(v))
}

// describeReply names a reply value for an error message without
// quoting all of a long one.
func describeReply(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("string %.40q", x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case []any:
		return fmt.Sprintf("an array of %d", len(x))
	}
	return fmt.Sprintf("%T", v)
}

// nextReply is nextScript's answer, decoded.
type nextReply struct {
	kind string // "ok", "stage", "limit" or "wait"
	// ok: the leased host, its entry, the scope version and the host's
	// throttle (0 if none); stage: the host and the staged completion to
	// finish.
	host, entry, scopeVer, stage string
	throttle                     time.Duration
	// limit: the leases still out; wait: the hosts ready and leased, and
	// when the next host becomes ready and the next lease expires
	// (wall-clock ms; has* false when there is none).
	leased, ready    int64
	readyAt, expiry  int64
	hasReady, hasExp bool
	// ok and wait: the schedule's earliest due time (ms; hasDue false
	// when it is empty or the frontier is not continuous).
	due    int64
	hasDue bool
}

// decodeNext checks and decodes a reply of nextScript.
func decodeNext(v any) (nextReply, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nextReply{}, fmt.Errorf("%w: next replied %s, want an array", ErrCorrupt, describeReply(v))
	}
	kind, _ := arr[0].(string)
	var nr nextReply
	var r *reply
	switch kind {
	case "ok":
		r = newReply("next", v, 6)
		nr.host, nr.entry, nr.scopeVer = r.str(1), r.str(2), r.str(3)
		ms, _ := r.millis(4)
		nr.throttle = time.Duration(ms) * time.Millisecond
		nr.due, nr.hasDue = r.millis(5)
	case "stage":
		// The fourth element, the entry out, is for a reader of the
		// reply: finishing a stage needs only its host and blob.
		r = newReply("next", v, 4)
		nr.host, nr.stage, _ = r.str(1), r.str(2), r.str(3)
	case "limit":
		r = newReply("next", v, 2)
		nr.leased = r.int(1)
	case "wait":
		r = newReply("next", v, 6)
		nr.readyAt, nr.hasReady = r.millis(1)
		nr.expiry, nr.hasExp = r.millis(2)
		nr.ready, nr.leased = r.int(3), r.int(4)
		nr.due, nr.hasDue = r.millis(5)
	default:
		return nextReply{}, fmt.Errorf("%w: next replied %s first, want ok, stage, limit or wait", ErrCorrupt, describeReply(arr[0]))
	}
	if err := r.Err(); err != nil {
		return nextReply{}, err
	}
	if nr.ready < 0 || nr.leased < 0 || nr.throttle < 0 || (kind == "ok" || kind == "stage") && nr.host == "" {
		return nextReply{}, fmt.Errorf("%w: next replied %v", ErrCorrupt, arr)
	}
	nr.kind = kind
	return nr, nil
}
