// Command serve serves a synthetic web (package testweb) from its own
// process, for crawl benchmarks that must not share a process with the
// crawler (the million-page run of docs/bench-scale.sh).
//
// Usage:
//
//	serve -hosts 10000 -pages 1000000 [-seed 1] [-addressing loopback] [-addr 0.0.0.0:18080]
//	      [-embeds] [-sitemaps] [-near-duplicates] [-seeds FILE] [-expected FILE]
//
// It writes every host's root to -seeds (one per line, for crawler crawl
// --seeds), the canonical URLs a crawl from them fetches to -expected
// (Expectation.Fetched, with embeds and sitemaps when the web has them;
// 14 s of CPU and 430 MiB for a million pages), then prints
// "ready ADDR" and the heap the web takes, and serves until killed.
// Loopback addressing (the default here) needs no resolver: give the
// crawler --allow-private.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/layercrawl/layercrawl/internal/testweb"
)

func main() {
	var o testweb.Options
	flag.Uint64Var(&o.Seed, "seed", 1, "seed of the web")
	flag.IntVar(&o.Hosts, "hosts", testweb.DefaultHosts, "hosts")
	flag.IntVar(&o.Pages, "pages", 0, "content pages over all hosts (default 100 per host)")
	flag.IntVar(&o.MaxHostPages, "max-host-pages", testweb.MaxHostPages, "most pages of one host")
	flag.StringVar(&o.Addr, "addr", "", "listen address (default 0.0.0.0:0 for loopback, 127.0.0.1:0 for names)")
	flag.BoolVar(&o.Embeds, "embeds", false, "pages have requisites (images, CSS, scripts, a CDN)")
	flag.BoolVar(&o.Sitemaps, "sitemaps", false, "robots.txt names sitemaps")
	flag.BoolVar(&o.NearDuplicates, "near-duplicates", false, "some hosts have near-duplicate press releases")
	addressing := flag.String("addressing", "loopback", "loopback (127.x.y.z hosts, no resolver needed) or names (h<i>.web.test, needs testweb's resolver)")
	seeds := flag.String("seeds", "", "write every host's root to this file")
	expected := flag.String("expected", "", "write the URLs a crawl from the seeds fetches to this file")
	cpuProfile := flag.String("cpuprofile", "", "debugging: write a CPU profile to this file, until SIGINT or SIGTERM")
	flag.Parse()
	switch *addressing {
	case "loopback":
		o.Addressing = testweb.Loopback
	case "names":
		o.Addressing = testweb.Names
	default:
		fail(fmt.Errorf("unknown -addressing %q", *addressing))
	}
	w, err := testweb.Start(o)
	if err != nil {
		fail(err)
	}
	if *seeds != "" {
		fail(writeLines(*seeds, w.Seeds()))
	}
	if *expected != "" {
		e, err := w.Expected(testweb.ExpectOptions{Embeds: o.Embeds, Sitemaps: o.Sitemaps})
		if err != nil {
			fail(err)
		}
		fail(writeLines(*expected, e.Fetched()))
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		fail(err)
		fail(pprof.StartCPUProfile(f))
	}
	fmt.Printf("ready %s (%d hosts, %d pages, heap %.1f MiB)\n", w.Addr(), w.Hosts(), w.Options().Pages, float64(m.HeapAlloc)/(1<<20))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	pprof.StopCPUProfile()
	w.Close()
}

func writeLines(path string, lines []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	for _, l := range lines {
		bw.WriteString(l)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fail(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		os.Exit(1)
	}
}
