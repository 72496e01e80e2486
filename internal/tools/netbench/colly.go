package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gocolly/colly/v2"
)

// collyCommand is the crawler a colly user would write, held to the same
// politeness as the others: a LimitRule per host with Parallelism 1 and
// the politeness delay (colly sleeps it after each response, before the
// host's next request), and at most -concurrency requests in flight over
// all hosts, counted from the request going out to its body being
// closed. robots.txt is obeyed; every a[href] is visited.
func collyCommand(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("netbench colly", flag.ContinueOnError)
	seeds := fs.String("seeds", os.Getenv("NETBENCH_SEEDS"), "file of seed URLs, one per line")
	hostsFile := fs.String("hosts", os.Getenv("NETBENCH_HOSTS"), "file of the hosts' host:port, one per line (one LimitRule each)")
	concurrency := fs.Int("concurrency", 16, "requests in flight over all hosts")
	delay := fs.Duration("delay", 0, "politeness delay per host, after each response")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sb, err := os.ReadFile(*seeds)
	if err != nil {
		return fmt.Errorf("netbench colly: %w", err)
	}
	hb, err := os.ReadFile(*hostsFile)
	if err != nil {
		return fmt.Errorf("netbench colly: %w", err)
	}
	if *concurrency < 1 {
		return errors.New("netbench colly: concurrency below 1")
	}
	c := colly.NewCollector(colly.Async(true))
	c.IgnoreRobotsTxt = false
	var rules []*colly.LimitRule
	for _, h := range strings.Fields(string(hb)) {
		rules = append(rules, &colly.LimitRule{DomainGlob: h, Parallelism: 1, Delay: *delay})
	}
	if err := c.Limits(rules); err != nil {
		return fmt.Errorf("netbench colly: %w", err)
	}
	c.WithTransport(&limitedTransport{next: http.DefaultTransport, slots: make(chan struct{}, *concurrency)})
	var pages, errs atomic.Int64
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { _ = e.Request.Visit(e.Attr("href")) })
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnError(func(*colly.Response, error) { pages.Add(1); errs.Add(1) })
	for _, s := range strings.Fields(string(sb)) {
		_ = c.Visit(s)
	}
	c.Wait()
	fmt.Fprintf(os.Stderr, "netbench colly: %d pages, %d errors\n", pages.Load(), errs.Load())
	return nil
}

// limitedTransport lets at most cap(slots) requests be in flight, from
// RoundTrip until the response body is closed.
type limitedTransport struct {
	next  http.RoundTripper
	slots chan struct{}
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case t.slots <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		<-t.slots
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: func() { <-t.slots }}
	return resp, nil
}

type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
