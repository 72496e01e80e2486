// Command netbench measures crawlers on a network in miniature: every host
// of a synthetic web (internal/testweb) and of any static documentation
// sites is served through its own Shopify toxiproxy proxy, embedded here,
// on its own loopback address, with a round-trip time, jitter and a
// bandwidth cap per connection. This machine's kernel has no netem, so
// the delay is added in user space by the proxies.
//
// Usage:
//
//	netbench run [flags] -- COMMAND [ARG...]
//	netbench summarize [-baseline LABEL] RESULTS.tsv
//	netbench colly -seeds FILE [-concurrency N] [-delay D]
//	netbench replay -paths FILE [-concurrency N]
//
// run starts the network, runs COMMAND once with NETBENCH_SEEDS (a file
// of the hosts' root URLs), NETBENCH_HOSTS (a file of their host:port)
// and NETBENCH_DIR (an empty directory, removed afterwards) in its
// environment, stops the network, and appends one line to -results: the
// wall time, the user and system CPU of COMMAND and every process it
// waited for, the requests and HTML pages the hosts answered, and the
// ideal time of those requests (see Ideal), with the load average when
// the run started. summarize prints the medians per scenario and label
// as a Markdown table. colly is a plain colly crawler held to one request
// in flight per host, a peer for the comparison. replay fetches the
// requests another run wrote with -paths-out, each host's back to back on
// one kept-alive connection, hosts longest first on -concurrency workers:
// the ideal crawl, run on the emulated network as loaded as the others,
// which shows how much of a crawler's distance from the ideal time the
// emulation itself adds.
//
// Caveats of the emulation: the proxies accept a connection at once, so a
// TCP handshake costs no round trip here (on a real network it costs one);
// the bandwidth cap is per connection, not per host; the CPU figures are
// spent on loopback and include nothing of a real network stack's, while
// the wall times are the emulated network's. docs/bench-network.sh runs
// the comparison.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/rs/zerolog"
)

func main() {
	// The toxics log through zerolog's global logger.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "run":
		err = runCommand(ctx, os.Args[2:])
	case "summarize":
		err = summarizeCommand(os.Args[2:])
	case "colly":
		err = collyCommand(ctx, os.Args[2:])
	case "replay":
		err = replayCommand(ctx, os.Args[2:])
	default:
		usage()
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, strings.TrimSpace(`
usage: netbench run [flags] -- COMMAND [ARG...]
       netbench summarize [-baseline LABEL] RESULTS.tsv
       netbench colly -seeds FILE [-concurrency N] [-delay D]
       netbench replay -paths FILE [-concurrency N]
run 'netbench run -h' for the network's flags`))
	os.Exit(2)
}
