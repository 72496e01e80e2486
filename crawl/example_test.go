package crawl_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/gocolly/colly/v2"

	"github.com/layercrawl/layercrawl/crawl"
)

// exampleSite serves five linked pages, each with a title, on loopback.
func exampleSite() *httptest.Server {
	pages := map[string]string{
		"/":              `<title>Home</title><a href="/guide/">Guide</a> <a href="/news">News</a>`,
		"/guide/":        `<title>Guide</title><a href="install">Install</a> <a href="../">Home</a>`,
		"/guide/install": `<title>Install</title><a href="/guide/">Guide</a>`,
		"/news":          `<title>News</title><a href="/news?page=2">Older</a>`,
		"/news?page=2":   `<title>Older news</title><a href="/news">News</a>`,
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
}

// exampleOptions are the options every example shares: a local site (the
// private-address guard off) crawled without politeness delay.
func exampleOptions(seed, dir string) crawl.Options {
	o := crawl.Options{Seeds: []string{seed}, Dir: dir}
	o.Fetch.AllowPrivate = true // the site is on loopback
	o.Politeness.Delay = -1     // no delay between requests: a test server
	return o
}

// Embed a crawl in a program: options, New, Run, Close. The crawl log and
// the WARC files go to Dir; running it again with the same Dir resumes.
func Example() {
	site := exampleSite()
	defer site.Close()
	dir, err := os.MkdirTemp("", "layercrawl-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	opts := crawl.Options{Seeds: []string{site.URL + "/"}, Dir: dir}
	opts.Fetch.AllowPrivate = true // the site is on loopback
	opts.Politeness.Delay = -1     // a test server: no delay between requests
	c, err := crawl.New(opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("pages fetched:", c.Stats().Pages)
	// Output: pages fetched: 5
}

// Collect data from every page with OnPage: here the titles. OnPage runs
// on many goroutines at once.
func Example_collect() {
	site := exampleSite()
	defer site.Close()
	dir, _ := os.MkdirTemp("", "layercrawl-example")
	defer os.RemoveAll(dir)

	var mu sync.Mutex
	var titles []string
	o := exampleOptions(site.URL+"/", dir)
	o.OnPage = func(p *crawl.Page) error {
		if p.Result == nil || p.Result.Status != http.StatusOK {
			return nil
		}
		body := string(p.Result.Body)
		if i, j := strings.Index(body, "<title>"), strings.Index(body, "</title>"); i >= 0 && j > i {
			mu.Lock()
			titles = append(titles, body[i+len("<title>"):j])
			mu.Unlock()
		}
		return nil
	}
	c, err := crawl.New(o)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	slices.Sort(titles)
	fmt.Println(strings.Join(titles, ", "))
	// Output: Guide, Home, Install, News, Older news
}

// A colly user keeps their callbacks: layercrawl fetches (with its
// frontier, duplicate filter, politeness, robots.txt and WARC output) and
// hands every page to the Collector, whose Visit calls are followed.
func Example_colly() {
	site := exampleSite()
	defer site.Close()
	dir, _ := os.MkdirTemp("", "layercrawl-example")
	defer os.RemoveAll(dir)

	cc := colly.NewCollector()
	var mu sync.Mutex
	var titles []string
	cc.OnHTML("title", func(e *colly.HTMLElement) {
		mu.Lock()
		titles = append(titles, e.Text)
		mu.Unlock()
	})
	cc.OnHTML("a[href]", func(e *colly.HTMLElement) {
		e.Request.Visit(e.Attr("href"))
	})

	o := exampleOptions(site.URL+"/", dir)
	o.Collector = cc
	c, err := crawl.New(o)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	slices.Sort(titles)
	fmt.Println(strings.Join(titles, ", "))
	// Output: Guide, Home, Install, News, Older news
}

// Stop a crawl early by ending its context (Ctrl-C in the command does the
// same), then resume it: a new Crawler on the same Dir fetches only what
// is left.
func Example_stopAndResume() {
	site := exampleSite()
	defer site.Close()
	dir, _ := os.MkdirTemp("", "layercrawl-example")
	defer os.RemoveAll(dir)

	ctx, stop := context.WithCancelCause(context.Background())
	enough := errors.New("two pages are enough for now")
	var mu sync.Mutex
	n := 0
	o := exampleOptions(site.URL+"/", dir)
	o.Concurrency = 1
	o.OnPage = func(p *crawl.Page) error {
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 2 {
			stop(enough)
		}
		return nil
	}
	c, err := crawl.New(o)
	if err != nil {
		log.Fatal(err)
	}
	err = c.Run(ctx)
	fmt.Println("first run:", err, "- pages:", c.Stats().Pages)
	c.Close()

	o.OnPage = nil
	c, err = crawl.New(o)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	s := c.Stats()
	fmt.Println("resumed:", c.Resumed(), "- pages this run:", s.Fetch.Fetched, "- in all:", s.Pages)
	// Output:
	// first run: two pages are enough for now - pages: 2
	// resumed: true - pages this run: 3 - in all: 5
}
