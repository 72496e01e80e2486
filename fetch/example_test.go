package fetch_test

import (
	"fmt"
	"log"
	"net/url"

	"github.com/layercrawl/layercrawl/fetch"
)

func ExampleExtractLinks() {
	page := []byte(`<html><head><base href="/docs/"></head><body>
<a href="intro.html">Intro</a>
<a href="/login" rel="nofollow">Log in</a>
<a href="mailto:team@example.com">Mail</a>
<iframe src="https://video.example.net/embed/1"></iframe>
</body></html>`)
	doc, err := url.Parse("https://example.com/index.html")
	if err != nil {
		log.Fatal(err)
	}
	base, links, err := fetch.ExtractLinks(page, "text/html; charset=utf-8", doc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("base:", base)
	for _, l := range links {
		ref, err := url.Parse(l.Href)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(l.Tag, base.ResolveReference(ref))
	}
	// Output:
	// base: https://example.com/docs/
	// a https://example.com/docs/intro.html
	// iframe https://video.example.net/embed/1
}

func ExampleParseRobots() {
	robots, err := fetch.ParseRobots([]byte(`
User-agent: *
Disallow: /private/
Allow: /private/press/
Disallow: /*.pdf$
Crawl-delay: 2
`))
	if err != nil {
		log.Fatal(err)
	}
	const ua = "layercrawl/0.1 (+https://github.com/layercrawl/layercrawl)"
	for _, p := range []string{"/", "/private/x", "/private/press/release", "/a/report.pdf", "/a/report.pdf?v=2"} {
		fmt.Println(p, robots.Allowed(ua, p))
	}
	fmt.Println("delay:", robots.CrawlDelay(ua))
	// Output:
	// / true
	// /private/x false
	// /private/press/release true
	// /a/report.pdf false
	// /a/report.pdf?v=2 true
	// delay: 2s
}
