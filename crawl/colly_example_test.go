package crawl_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"

	"github.com/gocolly/colly/v2"

	"github.com/layercrawl/layercrawl/crawl"
)

// Move a colly program onto the crawl. The program
//
//	c := colly.NewCollector(
//		colly.AllowedDomains("docs.example.org"),
//		colly.MaxDepth(2),
//	)
//	c.OnHTML("title", func(e *colly.HTMLElement) { ... })
//	c.OnHTML("a[href]", func(e *colly.HTMLElement) { e.Request.Visit(e.Attr("href")) })
//	c.Visit("https://docs.example.org/")
//
// keeps its callbacks on a Collector without settings, and gives the rest
// to crawl.Options: the URLs it would Visit first become Seeds,
// AllowedDomains the scope (Admission.Scope: the seeds' hosts, the
// default; Admission.Allow for other sets of hosts), and MaxDepth(2) the
// crawl's Admission.MaxDepth 1 (colly counts the seed as depth 1, the
// crawl as 0). The callbacks see the same Request.Depth as under colly.
// crawl.New refuses a Collector that keeps such settings and names the
// option to use instead. The crawl adds politeness, robots.txt, WARC
// files, a duplicate filter and resuming.
func Example_collyMigration() {
	site := exampleSite()
	defer site.Close()
	dir, err := os.MkdirTemp("", "layercrawl-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cc := colly.NewCollector() // no AllowedDomains, no MaxDepth: the crawl's options below
	var mu sync.Mutex
	var titles []string
	cc.OnHTML("title", func(e *colly.HTMLElement) {
		mu.Lock()
		defer mu.Unlock()
		titles = append(titles, fmt.Sprintf("depth %d: %s", e.Request.Depth, e.Text))
	})
	cc.OnHTML("a[href]", func(e *colly.HTMLElement) {
		e.Request.Visit(e.Attr("href"))
	})

	o := exampleOptions(site.URL+"/", dir) // Seeds: what colly would Visit first
	o.Collector = cc
	o.Admission.MaxDepth = 1 // colly.MaxDepth(2)
	// colly.AllowedDomains(host of the seed) is the default scope: the
	// seeds' hosts.
	c, err := crawl.New(o)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	slices.Sort(titles)
	for _, t := range titles {
		fmt.Println(t)
	}
	// Output:
	// depth 1: Home
	// depth 2: Guide
	// depth 2: News
}
