package fetch_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/gocolly/colly/v2"

	"github.com/layercrawl/layercrawl/mlbf"
)

// A crawler built directly on colly can use an MLBF as its duplicate check:
// colly's own visited set is switched off (AllowURLRevisit) and OnRequest
// aborts every request whose URL the filter has seen, with one atomic
// TestAndAdd. (A real crawler would pass urlnorm's segments of the
// normalized URL rather than mlbf.SplitURL of the raw one.)
func Example_skipDuplicatesWithColly() {
	pages := map[string]string{
		"/":  `<a href="/a">a</a> <a href="/b">b</a> <a href="/a">a again</a> <a href="/c?x=1">c</a>`,
		"/a": `<a href="/">home</a> <a href="/b">b</a>`,
		"/b": `<a href="/a">a</a> <a href="/c?x=2">c</a>`,
		"/c": `no links`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body>%s</body></html>", pages[r.URL.Path])
	}))
	defer srv.Close()

	seen, err := mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: 100_000, FalsePositiveRate: 0.001})
	if err != nil {
		log.Fatal(err)
	}
	c := colly.NewCollector(colly.AllowURLRevisit())
	transport := &http.Transport{DisableKeepAlives: true}
	defer transport.CloseIdleConnections()
	c.WithTransport(transport)
	c.OnRequest(func(r *colly.Request) {
		if seen.TestAndAdd(mlbf.SplitURL(r.URL.String())) {
			fmt.Println("skip ", r.URL.RequestURI())
			r.Abort()
			return
		}
		fmt.Println("fetch", r.URL.RequestURI())
	})
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		if err := e.Request.Visit(e.Attr("href")); err != nil {
			log.Print(err)
		}
	})
	if err := c.Visit(srv.URL + "/"); err != nil {
		log.Fatal(err)
	}
	c.Wait()
	// Output:
	// fetch /
	// fetch /a
	// skip  /
	// fetch /b
	// skip  /a
	// fetch /c?x=2
	// skip  /b
	// skip  /a
	// fetch /c?x=1
}
