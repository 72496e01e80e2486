// Command collycrawl is the crawler a colly user would write, for the
// side-by-side benchmark (internal/tools/scalebench -colly): an
// asynchronous collector, a parallelism limit, robots.txt obeyed, every
// a[href] visited. It keeps no archive; it prints "pages N" every second
// and at the end.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gocolly/colly/v2"
)

func main() {
	seeds := flag.String("seeds", "", "file of seed URLs, one per line")
	par := flag.Int("parallelism", 64, "colly LimitRule Parallelism (requests in flight)")
	flag.Parse()
	b, err := os.ReadFile(*seeds)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := colly.NewCollector(colly.Async(true))
	c.IgnoreRobotsTxt = false
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: *par}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var pages, errs atomic.Int64
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { _ = e.Request.Visit(e.Attr("href")) })
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnError(func(*colly.Response, error) { pages.Add(1); errs.Add(1) })
	out := bufio.NewWriter(os.Stdout)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintf(out, "pages %d\n", pages.Load())
				out.Flush()
			}
		}
	}()
	for _, s := range strings.Fields(string(b)) {
		_ = c.Visit(s)
	}
	c.Wait()
	close(stop)
	fmt.Fprintf(out, "pages %d\n", pages.Load())
	out.Flush()
	fmt.Fprintf(os.Stderr, "collycrawl: %d pages, %d errors\n", pages.Load(), errs.Load())
}
