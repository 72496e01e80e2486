package fetch

import "context"

// FetchBodyLimit is FetchBody with another cap on the body than
// Options.MaxBodySize: limit bytes after decompression (a body cut there
// is Truncated "length"), at least 1. A crawler reads sitemaps with it,
// whose limit (50 MiB uncompressed) is the protocol's, not a page's.
func (f *Fetcher) FetchBodyLimit(ctx context.Context, rawURL string, limit int64) (*Result, error) {
	u, err := parseFetchURL(rawURL)
	if err != nil {
		return nil, err
	}
	x, err := f.exchange(ctx, f.pageClient, u, rawURL, max(limit, 1))
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
