// Command embed is a program outside the layercrawl module that runs a
// crawl through package crawl only, as a Go team would embed it: it crawls
// the seeds given as arguments into the directory given by -out, and
// prints the title of every HTML page it fetched.
//
// Its test crawls a local site both ways, with this program and with
// "crawler crawl", and checks that they fetch the same URLs and archive
// the same payloads.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"regexp"
	"sync"

	"github.com/layercrawl/layercrawl/crawl"
)

var titleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

func main() {
	out := flag.String("out", "embed-out", "output directory")
	private := flag.Bool("allow-private", false, "allow loopback and private addresses")
	delay := flag.Duration("delay", 0, "politeness delay (0: the default, negative: none)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var mu sync.Mutex
	opts := crawl.Options{Seeds: flag.Args(), Dir: *out}
	opts.Fetch.AllowPrivate = *private
	opts.Politeness.Delay = *delay
	opts.OnPage = func(p *crawl.Page) error {
		if p.Result == nil {
			return nil
		}
		if m := titleRE.FindSubmatch(p.Result.Body); m != nil {
			mu.Lock()
			fmt.Printf("%s\t%s\n", p.URL, m[1])
			mu.Unlock()
		}
		return nil
	}
	c, err := crawl.New(opts)
	if err != nil {
		log.Fatal(err)
	}
	err = c.Run(ctx)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Fatal(err)
	}
	s := c.Stats()
	fmt.Fprintf(os.Stderr, "%d pages, %d discovered, %d duplicates\n", s.Pages, s.New, s.Duplicates)
}
