package fetch

import (
	"context"
	"net/http"
)

// FetchBodyLimit is FetchBody with another cap on the body than
// Options.MaxBodySize: limit bytes after decompression (a body cut there
// is Truncated "length"), at least 1. A crawler reads sitemaps with it,
// whose limit (50 MiB uncompressed) is the protocol's, not a page's.
func (f *Fetcher) FetchBodyLimit(ctx context.Context, rawURL string, limit int64) (*Result, error) {
	return f.fetchBody(ctx, rawURL, limit, Conditional{})
}

// Conditional holds the validators of an earlier response of a URL, sent
// as the preconditions of a conditional GET (RFC 9110, section 13.1). The
// zero value sends none.
type Conditional struct {
	ETag         string // sent as If-None-Match when not empty
	LastModified string // sent as If-Modified-Since when not empty, as the server wrote it
}

// set adds c's preconditions to h; both when both are set (a server
// that honours If-None-Match then ignores If-Modified-Since, RFC 9110
// section 13.2.2, and one that ignores it still checks the date).
func (c Conditional) set(h http.Header) {
	if c.ETag != "" {
		h["If-None-Match"] = []string{c.ETag}
	}
	if c.LastModified != "" {
		h["If-Modified-Since"] = []string{c.LastModified}
	}
}

// FetchBodyIf is FetchBody as a conditional GET with cond's
// preconditions. A 304 Not Modified is a success like any status: its
// Result has Status 304, no Body, and the raw exchange
// (RawRequest with the preconditions, RawResponse with the head).
func (f *Fetcher) FetchBodyIf(ctx context.Context, rawURL string, cond Conditional) (*Result, error) {
	return f.fetchBody(ctx, rawURL, f.opts.MaxBodySize, cond)
}

func (f *Fetcher) fetchBody(ctx context.Context, rawURL string, limit int64, cond Conditional) (*Result, error) {
	u, err := parseFetchURL(rawURL)
	if err != nil {
		return nil, err
	}
	x, err := f.exchange(ctx, f.pageClient, u, rawURL, max(limit, 1), cond)
	if x == nil {
		return nil, err
	}
	res := x.result(rawURL)
	res.Base = u
	if res.Status >= 300 && res.Status < 400 {
		res.Location = res.Header.Get("Location")
	}
	return res, err
}
