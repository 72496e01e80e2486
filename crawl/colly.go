package crawl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gocolly/colly/v2"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
)

// collyBridge hands fetched pages to a user's colly.Collector as if it
// had fetched them: the collector requests each page through a transport
// that answers from the crawl's Result, so its callbacks run with colly's
// own semantics (charset, <base href>, selectors), and the URLs they
// Visit are caught before any request and returned as links.
//
// What the callbacks see matches a plain colly crawl of the same site:
// e.Request.Depth is 1 for a seed and one more per link followed
// (redirects add none, as colly follows them inside one request); a
// redirect runs no callback, and the page it leads to runs them under its
// own URL, as colly reports the response at the end of the redirects.
// One difference remains: OnRequest callbacks registered before the
// Collector reached the crawl also run for every Visit, before the
// bridge's own OnRequest catches it (colly runs them in the order they
// were registered), and again when the crawl fetches the URL.
//
// The bridge sets these fields of the Collector, which the crawl does in
// its own way: the transport (WithTransport: responses come from the
// crawl's fetches), IgnoreRobotsTxt (true: the crawl obeys robots.txt),
// AllowURLRevisit (true: the crawl's duplicate filter decides), Async
// (false: the crawl's workers run the callbacks, many at once),
// MaxBodySize (0: Options.Fetch.MaxBodySize applies) and CacheDir (none).
// Collector settings that would make colly skip pages the crawl fetches
// (AllowedDomains, URLFilters, MaxDepth, ...) are rejected by
// Options.Validate, which names the crawl option to use instead.
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

// replay runs the collector's callbacks on res, the page of ent, and
// returns the URLs they visited. A redirect runs none: colly would have
// followed it, and the crawl fetches its target as a page of its own.
func (b *collyBridge) replay(ent frontier.Entry, res *fetch.Result) ([]fetch.Link, error) {
	if isFollowedRedirect(res) {
		return nil, nil
	}
	rp := &replay{b: b, res: res}
	id := strconv.FormatUint(b.next.Add(1), 10)
	b.pages.Store(id, rp)
	defer b.pages.Delete(id)
	// Collector.Request always starts at depth 1: a Request built with
	// the page's depth and submitted with Do keeps it, and the callbacks'
	// Visits then carry depth+1 as in colly.
	spec, err := json.Marshal(struct {
		URL     string
		Method  string
		Depth   int
		Headers http.Header
	}{res.URL, http.MethodGet, collyDepth(ent), http.Header{replayHeader: {id}}})
	if err != nil {
		return nil, fmt.Errorf("crawl: colly request for %s: %w", res.URL, err)
	}
	req, err := b.c.UnmarshalRequest(spec)
	if err != nil {
		return nil, fmt.Errorf("crawl: colly request for %s: %w", res.URL, err)
	}
	req.Ctx.Put(replayKey, rp)
	// colly reports through its OnError callbacks, and returns, the
	// errors its settings make (an HTTP error status without
	// ParseHTTPErrorResponse): the callbacks then behave as in colly, and
	// the crawl goes on. Only a replay that went astray is the crawl's
	// error.
	if err := req.Do(); errors.Is(err, errReplayLost) {
		return nil, fmt.Errorf("crawl: colly callbacks on %s: %w", res.URL, err)
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.links, nil
}

// isFollowedRedirect reports whether net/http's client, which colly
// fetches with, would follow res rather than return it.
func isFollowedRedirect(res *fetch.Result) bool {
	switch res.Status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return res.Location != ""
	}
	return false
}

// collyDepth is the Request.Depth colly gives the page of ent: 1 for a
// seed, plus one per hop that is not a redirect (colly follows redirects
// within one request). Where the hop path is shorter than the depth (cut
// to its last letters, or not recorded) only the consecutive redirects
// that led to the page are known and subtracted.
func collyDepth(ent frontier.Entry) int {
	redirects := ent.Redirects
	if len(ent.Hops) == ent.Depth {
		redirects = strings.Count(ent.Hops, string(rune(frontier.HopRedirect)))
	}
	return 1 + max(ent.Depth-redirects, 0)
}

// collyDefaultUserAgent is the User-Agent colly.NewCollector sets.
const collyDefaultUserAgent = "colly - https://github.com/gocolly/colly"

// checkCollector returns why the crawl cannot honour a setting of c, or
// "". Each of these settings makes colly refuse a request before its
// callbacks run, so the crawl would fetch and archive pages whose
// callbacks never fire; the crawl's own options do the same job on what
// is fetched. userAgent is Options.Fetch.UserAgent.
func checkCollector(c *colly.Collector, userAgent string) string {
	switch {
	case len(c.AllowedDomains) > 0:
		return "AllowedDomains is not applied by the crawl: set Admission.Scope (host or domain of the seeds) or Admission.Allow (a regular expression per host) instead"
	case len(c.DisallowedDomains) > 0:
		return "DisallowedDomains is not applied by the crawl: set Admission.Deny (a regular expression per host) instead"
	case len(c.URLFilters) > 0:
		return "URLFilters is not applied by the crawl: set Admission.Allow to the same regular expressions instead"
	case len(c.DisallowedURLFilters) > 0:
		return "DisallowedURLFilters is not applied by the crawl: set Admission.Deny to the same regular expressions instead"
	case c.MaxDepth > 0:
		return fmt.Sprintf("MaxDepth %d is not applied by the crawl: set Admission.MaxDepth to %d instead (colly counts a seed as depth 1, the crawl as 0)", c.MaxDepth, c.MaxDepth-1)
	case c.MaxRequests > 0:
		return "MaxRequests is not applied by the crawl: set MaxPages instead"
	case c.UserAgent != collyDefaultUserAgent && c.UserAgent != userAgent:
		return fmt.Sprintf("UserAgent %q is not sent by the crawl, which fetches the pages: set Fetch.UserAgent instead", c.UserAgent)
	}
	return ""
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
