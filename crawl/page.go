package crawl

import (
	"github.com/layercrawl/layercrawl/fetch"
)

// Page is one fetch attempt as Options.OnPage sees it. OnPage may keep the
// Page and its Result after it returns, but must not change Result.
type Page struct {
	// URL is the canonical URL fetched.
	URL string
	// Depth is the number of hops (links and redirects) from a seed.
	Depth int
	// Via is the page URL was found on, or the URL that redirected to
	// it; empty for a seed.
	Via string
	// Hops is the hop path from a seed ("LLE": a requisite of a page two
	// links from a seed); see frontier.Entry.Hops.
	Hops string
	// Result is the response: status, header, decoded body, timing. It
	// is nil when the fetch failed before a response arrived. An HTTP
	// error status is a Result, not an Err.
	Result *fetch.Result
	// Err says why the fetch failed; nil when it did not. A body cut
	// midway gives both a partial Result and an Err.
	Err error
	// Links are the page's outlinks in document order, as written
	// (Result.Base resolves them), followed by those its Collector
	// callbacks visited. OnPage may remove links, which are then not
	// followed, and add links (absolute, or relative to Result.Base),
	// which are checked and followed like the others: as requisites when
	// their Hop is fetch.HopEmbed, as links otherwise.
	Links []fetch.Link
	// Attempt numbers the fetches of URL, from 1 (Options.Retry).
	Attempt int
	// Retry is true when this attempt failed transiently and URL will be
	// fetched again: the attempt's links are then not followed (the
	// retry's are).
	Retry bool
}

// AddLink appends a link to follow, absolute or relative to the page's
// base URL.
func (p *Page) AddLink(href string) {
	p.Links = append(p.Links, fetch.Link{Href: href, Tag: "hook"})
}
