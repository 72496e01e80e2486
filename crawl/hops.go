package crawl

import "github.com/layercrawl/layercrawl/fetch"

// splitHops splits a page's references into links and requisites
// (fetch.HopEmbed), as written. A meta refresh (fetch.HopRedirect) is
// followed as a link, as links added by hooks are.
func splitHops(links []fetch.Link) (hrefs, embeds []string) {
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
		if l.Hop == fetch.HopEmbed {
			embeds = append(embeds, l.Href)
		} else {
			hrefs = append(hrefs, l.Href)
		}
	}
	return hrefs, embeds
}
