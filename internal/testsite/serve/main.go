// Command serve serves a generated test site (package testsite) on three
// loopback ports, for crawl benchmarks that need the site in a separate
// process (docs/bench-crawl.sh).
//
// Usage:
//
//	serve -pages 4400 -ports 18081,18082,18083 [-plain]
//
// It prints one line "ready http://127.0.0.1:P1/ ..." once all three
// listen, and serves until killed.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/layercrawl/layercrawl/internal/testsite"
)

func main() {
	pages := flag.Int("pages", 4400, "pages of the site")
	ports := flag.String("ports", "18081,18082,18083", "three comma-separated loopback ports")
	plain := flag.Bool("plain", false, "no 127.1 / 0x7f.0.0.1 spellings of the host (see testsite.Site.Plain)")
	flag.Parse()
	p := strings.Split(*ports, ",")
	if len(p) != testsite.NumHosts || *pages < 1 {
		fmt.Fprintf(os.Stderr, "serve: want %d ports and a positive page count\n", testsite.NumHosts)
		os.Exit(2)
	}
	site := &testsite.Site{Pages: *pages, Plain: *plain}
	lns := make([]net.Listener, len(p))
	for h, port := range p {
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			fmt.Fprintf(os.Stderr, "serve: %v\n", err)
			os.Exit(1)
		}
		lns[h] = ln
		site.Addrs[h] = ln.Addr().String()
	}
	errc := make(chan error, len(lns))
	for h, ln := range lns {
		srv := &http.Server{Handler: testsite.NewHost(site, h)}
		go func() { errc <- srv.Serve(ln) }()
	}
	fmt.Println("ready", strings.Join(site.Roots(), " "))
	fmt.Fprintf(os.Stderr, "serve: %v\n", <-errc)
	os.Exit(1)
}
