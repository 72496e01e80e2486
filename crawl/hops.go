package crawl

import "github.com/layercrawl/layercrawl/fetch"

// splitHops splits a page's references into links and requisites
// (fetch.HopEmbed), as written, and returns its first meta refresh
// (fetch.HopRedirect), which the frontier follows as a redirect, as
// Heritrix counts it (hop R, one more redirect). Further refreshes, which
// a browser ignores, are followed as links, as links added by hooks are.
func splitHops(links []fetch.Link) (hrefs, embeds []string, refresh string) {
	n := 0
	for _, l := range links {
		if l.Hop == fetch.HopEmbed {
			n++
		}
	}
	if n > 0 {
		embeds = make([]string, 0, n)
	}
	if len(links) > n {
		hrefs = make([]string, 0, len(links)-n)
	}
	for _, l := range links {
		switch {
		case l.Hop == fetch.HopEmbed:
			embeds = append(embeds, l.Href)
		case l.Hop == fetch.HopRedirect && refresh == "":
			refresh = l.Href
		default:
			hrefs = append(hrefs, l.Href)
		}
	}
	return hrefs, embeds, refresh
}
