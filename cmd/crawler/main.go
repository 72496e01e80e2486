// Command crawler is layercrawl's single binary: it crawls, runs the
// experiments that measure the multi-layer Bloom filter, and offers the tools
// around them (URL normalization, status of a distributed crawl).
//
// Usage:
//
//	crawler <command> [flags]
//
// Run "crawler help" for the list of commands and "crawler <command> -h" for
// the flags of one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/layercrawl/layercrawl/crawl"
)

// env is what a subcommand may touch of the outside world, so that tests can
// run commands in-process with their own streams.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// gomaxprocs is runtime.GOMAXPROCS, through which crawl --cpus
	// sets how many threads run Go code; nil in tests that run commands
	// in their own process, where it is left alone.
	gomaxprocs func(int) int
}

// command is one subcommand of the binary.
type command struct {
	name    string
	summary string
	// run parses args (without the command name) and does the work. It
	// returns errUsage (possibly wrapped) for bad flags or arguments.
	run func(ctx context.Context, e env, args []string) error
}

// errUsage marks an error in the command line rather than in the work.
var errUsage = errors.New("usage error")

// commands lists the subcommands in the order "crawler help" prints them.
func commands() []command {
	return []command{
		{"crawl", "crawl a seed list end to end (frontier, robots.txt, WARC output, resume)", runCrawl},
		{"experiment", "replay URL sets through BF and MLBF and plot false positives and timings", runExperiment},
		{"index", "write the CDXJ index of a crawl's WARC files (DIR/indexes/index.cdxj) for pywb and ReplayWeb.page", runIndex},
		{"normalize", "normalize URLs from stdin, one per line (or print their filter segments)", runNormalize},
		{"pack", "package a crawl as a WACZ file that ReplayWeb.page opens", runPack},
		{"status", "print the progress of a running crawl (through its --http-addr) or of a distributed one (Redis)", runStatus},
		{"version", "print the module version and the git commit the binary was built from", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, gomaxprocs: runtime.GOMAXPROCS}, os.Args[1:])
	stop()
	os.Exit(code)
}

// Exit codes: 0 on success.
const (
	exitFailed = 1 // the work failed
	exitUsage  = 2 // a bad command line, bad options, or a state that cannot be resumed
	exitNoSeed = 4 // crawl: no seed could be fetched (wget exits 4 on a network failure)
)

// run dispatches args to a subcommand and returns the process exit code:
// 0 on success, exitFailed, exitUsage or exitNoSeed.
func run(ctx context.Context, e env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		usage(e.stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, e, args[1:])
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(e.stderr, "crawler %s: %v\n", name, err)
			return exitUsage
		case errors.Is(err, crawl.ErrNoSeedFetched):
			fmt.Fprintf(e.stderr, "crawler %s: %v\n", name, err)
			return exitNoSeed
		default:
			fmt.Fprintf(e.stderr, "crawler %s: %v\n", name, err)
			return exitFailed
		}
	}
	fmt.Fprintf(e.stderr, "crawler: unknown command %q\n\n", name)
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: crawler <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "crawler <command> -h" for the flags of one command.`)
}

// newFlagSet returns a flag set for a subcommand whose errors come back to
// the caller instead of exiting, with a usage line naming the command.
func newFlagSet(e env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("crawler "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crawler %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs, turning a parse failure into errUsage and
// rejecting stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}
