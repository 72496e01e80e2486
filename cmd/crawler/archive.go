package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"

	"github.com/layercrawl/layercrawl/storage"
)

// runIndex writes the CDXJ index of a crawl's WARC files.
func runIndex(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "index", "DIR")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: crawler index DIR

Writes DIR/indexes/index.cdxj: one CDXJ line per response and revisit record
of DIR/warc/*.warc.gz (DIR is a crawl's --out), sorted by SURT key then
timestamp, as pywb and ReplayWeb.page read it. The file is replaced
atomically; the crawl writes it at its end too (crawl --no-index does not).
A WARC file with a complete sidecar index in DIR/indexes/perwarc (the crawl's
WARC writer writes one per file as it goes, with the file's final size when it
closes it) is indexed from it, the same lines, without reading the WARC file;
any other (a crawl killed while writing it, --no-index, another tool's) is read.
`)
	}
	dir, err := oneDirArg(fs, args, 1)
	if err != nil {
		return err
	}
	st, err := storage.WriteCrawlIndex(ctx, dir[0])
	if errors.Is(err, storage.ErrNotCrawlDir) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s: %d records from %d WARC files (%d from their sidecar index)\n", filepath.Join(dir[0], storage.CrawlIndexPath), st.Records, st.Files, st.Sidecars)
	for _, f := range st.Torn {
		fmt.Fprintf(e.stdout, "  %s ends inside a record (a crash?): its whole records are indexed\n", f)
	}
	return nil
}

// runPack writes a crawl as a WACZ package.
func runPack(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "pack", "DIR OUT.wacz")
	title := fs.String("title", "", `the package's title (default "layercrawl crawl of" and the first seed)`)
	above := fs.Int64("compress-index-above", 100000, "index lines above which the index is packed as indexes/index.cdx.gz (gzip blocks of 3000 lines) with indexes/index.idx, which ReplayWeb.page reads a block at a time, instead of indexes/index.cdxj, which it loads whole (-1: always index.cdxj)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: crawler pack [flags] DIR OUT.wacz

Packs the crawl output directory DIR (a crawl's --out) as a WACZ 1.1.1 file
that ReplayWeb.page opens: archive/ (the WARC files as they are),
indexes/index.cdxj (or index.cdx.gz and index.idx), pages/pages.jsonl (the seeds first, then every HTML page
with its title), datapackage.json (each file's SHA-256 and size) and
datapackage-digest.json. Entries are stored, not compressed again. OUT.wacz
is written to a temporary file and renamed into place when complete: an
error leaves it as it was.

Flags:
`)
		fs.PrintDefaults()
	}
	a, err := oneDirArg(fs, args, 2)
	if err != nil {
		return err
	}
	st, err := storage.PackWACZ(ctx, a[0], a[1], storage.WACZOptions{Software: softwareName(), Title: *title, CompressIndexAbove: *above})
	if errors.Is(err, storage.ErrNotCrawlDir) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s: %d bytes; %d WARC files, %d index lines, %d pages (%d seeds)\n", a[1], st.Bytes, st.WARCFiles, st.Records, st.Pages, st.Seeds)
	return nil
}

// oneDirArg parses fs and returns its n positional arguments.
func oneDirArg(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if got := fs.Args(); len(got) != n {
		return nil, fmt.Errorf("%w: want %d arguments, got %d (-h for usage)", errUsage, n, len(got))
	}
	return fs.Args(), nil
}

// softwareName is the WACZ "software": the module and its version.
func softwareName() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return "layercrawl " + bi.Main.Version
	}
	return "layercrawl"
}

// writeCrawlIndex writes the index of a finished crawl's output directory
// (crawl without --no-index).
func writeCrawlIndex(ctx context.Context, logger *slog.Logger, dir string) error {
	st, err := storage.WriteCrawlIndex(ctx, dir)
	if err != nil {
		return fmt.Errorf("crawl index: %w", err)
	}
	logger.Info("index written", "path", filepath.Join(dir, storage.CrawlIndexPath), "records", st.Records, "warc_files", st.Files, "from_sidecars", st.Sidecars, "torn_files", len(st.Torn))
	return nil
}
