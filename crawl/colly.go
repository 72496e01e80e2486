package crawl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gocolly/colly/v2"

	"github.com/layercrawl/layercrawl/fetch"
)

// collyBridge hands fetched pages to a user's colly.Collector as if it
// had fetched them: the collector requests each page through a transport
// that answers from the crawl's Result, so its callbacks run with colly's
// own semantics (charset, <base href>, selectors), and the URLs they
// Visit are caught before any request and returned as links.
type collyBridge struct {
	c     *colly.Collector
	pages sync.Map // replay id (string) -> *replay
	next  atomic.Uint64
}

// replayHeader carries a replay's id from Collector.Request to the
// transport; a request without it is a callback's Visit.
const replayHeader = "X-Layercrawl-Replay"

// replayKey is where a replay sits in the colly.Context of its request,
// which colly passes on to the requests its callbacks Visit.
const replayKey = "layercrawl.replay"

// replay is one page handed to the collector.
type replay struct {
	b     *collyBridge // the bridge that replays it
	res   *fetch.Result
	mu    sync.Mutex // protects links
	links []fetch.Link
}

func newCollyBridge(c *colly.Collector) *collyBridge {
	b := &collyBridge{c: c}
	c.AllowURLRevisit = true
	c.IgnoreRobotsTxt = true
	c.Async = false
	c.MaxDepth = 0
	c.MaxBodySize = 0
	c.CacheDir = ""
	c.WithTransport(b)
	c.OnRequest(func(r *colly.Request) {
		if r.Headers.Get(replayHeader) != "" {
			return
		}
		// A callback's Visit: follow the URL through the frontier instead.
		// A Collector given to several Crawlers has one hook per bridge:
		// only the replaying bridge's hook records the link.
		if rp, ok := r.Ctx.GetAny(replayKey).(*replay); ok && rp.b == b {
			rp.mu.Lock()
			rp.links = append(rp.links, fetch.Link{Href: r.URL.String(), Tag: "colly"})
			rp.mu.Unlock()
		}
		r.Abort()
	})
	return b
}

// replay runs the collector's callbacks on res and returns the URLs they
// visited.
func (b *collyBridge) replay(res *fetch.Result) ([]fetch.Link, error) {
	rp := &replay{b: b, res: res}
	id := strconv.FormatUint(b.next.Add(1), 10)
	b.pages.Store(id, rp)
	defer b.pages.Delete(id)
	ctx := colly.NewContext()
	ctx.Put(replayKey, rp)
	// colly reports through its OnError callbacks, and returns, the
	// errors its settings make (an HTTP error status without
	// ParseHTTPErrorResponse, a domain outside AllowedDomains): the
	// callbacks then behave as in colly, and the crawl goes on. Only a
	// replay that went astray is the crawl's error.
	if err := b.c.Request(http.MethodGet, res.URL, nil, ctx, http.Header{replayHeader: {id}}); errors.Is(err, errReplayLost) {
		return nil, fmt.Errorf("crawl: colly callbacks on %s: %w", res.URL, err)
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.links, nil
}

// errReplayLost is the transport's answer to a request it cannot place.
var errReplayLost = errors.New("crawl: colly request outside a replay")

// RoundTrip answers a replay request with the Result it names.
func (b *collyBridge) RoundTrip(req *http.Request) (*http.Response, error) {
	id := req.Header.Get(replayHeader)
	v, ok := b.pages.Load(id)
	if !ok {
		return nil, fmt.Errorf("%w: %s", errReplayLost, req.URL)
	}
	res := v.(*replay).res
	h := res.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	// The body is stored decoded: no Content-Encoding, its own length.
	h.Del("Content-Encoding")
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	return &http.Response{
		Status:        strconv.Itoa(res.Status) + " " + http.StatusText(res.Status),
		StatusCode:    res.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(res.Body)),
		ContentLength: int64(len(res.Body)),
		Request:       req,
	}, nil
}
