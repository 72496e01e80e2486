package crawl

import (
	"time"

	"github.com/layercrawl/layercrawl/fetch"
)

// Observer receives what Stats does not carry: one event per fetch and one
// per checkpoint, for metrics and live status pages (package monitor). Its
// methods are called on the crawl's workers and checkpoint task, many at
// once, synchronously: they must be quick, must not block, and cannot fail
// the crawl. A nil Options.Observer costs the crawl one pointer test per
// fetch.
type Observer interface {
	// Fetched is called for every request that reached a host or failed,
	// after its exchange is archived and logged.
	Fetched(FetchEvent)
	// Checkpointed is called after every checkpoint of the local state
	// that succeeded.
	Checkpointed(CheckpointEvent)
}

// FetchEvent describes one fetch. URL is as queued: it may hold userinfo,
// which an observer that shows it must redact.
type FetchEvent struct {
	URL   string
	Depth int
	// At is when the fetch started; Duration how long it took until the
	// body was read; TTFB the time to the first response byte (zero when
	// no response came).
	At             time.Time
	Duration, TTFB time.Duration
	// Status is the HTTP status, 0 when the request failed; Err the
	// failure, ErrKind its kind.
	Status  int
	Err     error
	ErrKind fetch.Kind
	// Bytes is the body length kept; Truncated its WARC-Truncated reason,
	// "" when whole.
	Bytes     int64
	Truncated string
	// WARCBytes is the compressed size of the exchange's WARC records.
	WARCBytes int64
	// Links is the number of links the page gave, before the hooks.
	Links int
}

// CheckpointEvent describes one checkpoint of the local state.
type CheckpointEvent struct {
	Generation uint64
	// Duration is the whole checkpoint; Blocked the part during which
	// seen-set inserts waited (the snapshot's memory copy).
	Duration, Blocked time.Duration
}

// observeFetch hands a fetch to the Observer; c.opts.Observer is not nil.
func (c *Crawler) observeFetch(ent string, depth int, res *fetch.Result, ferr error, warcBytes int64) {
	ev := FetchEvent{URL: ent, Depth: depth, Err: ferr, WARCBytes: warcBytes}
	if ferr != nil {
		ev.ErrKind = fetch.KindOf(ferr)
		ev.At = c.opts.Now()
	}
	if res != nil {
		ev.At, ev.Duration, ev.TTFB = res.FetchedAt, res.Duration, res.TTFB
		ev.Status, ev.Bytes, ev.Truncated, ev.Links = res.Status, int64(len(res.Body)), res.Truncated, len(res.Links)
	}
	c.opts.Observer.Fetched(ev)
}
