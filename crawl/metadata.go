package crawl

import (
	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// pageMetadata returns the block of the WARC metadata record of an HTML
// page (nil for anything else), as Heritrix writes it: the page's via and
// hop path, then one line per outlink and requisite extracted, in
// document order, "outlink: URL HOP CONTEXT" (for example
// "outlink: http://a.test/x L a/@href", or "... E img/@src"), the URL
// resolved against the page's base but not normalized. Links that
// OnPage or a Collector add or remove later are not in it.
func pageMetadata(ent frontier.Entry, res *fetch.Result) []byte {
	if res.Status < 200 || res.Status >= 300 || !fetch.IsHTML(res.ContentType, res.Body) {
		return nil
	}
	b := make([]byte, 0, 64+len(res.Links)*80)
	if ent.Via != "" {
		b = storage.AppendWARCField(b, "via", ent.Via)
	}
	if ent.Hops != "" {
		b = storage.AppendWARCField(b, "hopsFromSeed", ent.Hops)
	}
	var line []byte
	for _, l := range res.Links {
		target := l.Href
		if res.Base != nil {
			u, err := res.Base.Parse(l.Href)
			if err != nil {
				continue // not a URL: it never reaches the frontier either
			}
			target = u.String()
		}
		hop := l.Hop
		if hop == 0 {
			hop = fetch.HopLink
		}
		line = append(append(append(append(append(line[:0], target...), ' '), byte(hop)), ' '), l.Context...)
		b = storage.AppendWARCField(b, "outlink", string(line))
	}
	return b
}
