package crawl

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/testweb"
	"github.com/layercrawl/layercrawl/storage"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and returns
// it with a function that resizes it (contents kept). The tests run as
// root in CI; elsewhere, without root, they are skipped.
func mountTmpfs(t *testing.T, size string) (dir string, resize func(size string)) {
	t.Helper()
	dir = t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount tmpfs on %s: %v", dir, err)
		}
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	// Registered after TempDir's own cleanup, so it runs before it.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir, func(size string) {
		t.Helper()
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size="+size); err != nil {
			t.Fatalf("remount %s with size %s: %v", dir, size, err)
		}
	}
}

// TestDiskFull crawls until the disk under the output directory, or under
// the state directory, is full: the crawl must end with an error naming
// ENOSPC and the path, and, once there is room again, the resumed crawl
// must fetch every expected URL (at most the fetches under way at the
// failure twice), with a crawl log and WARC files that read back whole.
func TestDiskFull(t *testing.T) {
	if raceEnabled {
		t.Skip("a statistical crawl of thousands of pages, five to ten times slower under the race detector: .ci/run runs it without -race (racetests); the same code paths are race-tested on smaller crawls")
	}
	w, expect := startWeb(t, testweb.Options{Seed: 7, Hosts: 6, Pages: 3000}, testweb.ExpectOptions{})
	want := expect.Fetched()
	const concurrency = 8

	for _, tc := range []struct {
		name       string
		full       string // "out" or "state": which directory is on the small tmpfs
		size, more string
		checkpoint time.Duration
		expected   uint64
	}{
		// The WARC files fill the output directory.
		{"output", "out", "1m", "64m", 50 * time.Millisecond, 100_000},
		// The second snapshot of a filter for 6M URLs (about 16 MiB)
		// fills the state directory; the store still has its reserve.
		{"state/snapshot", "state", "40m", "128m", 200 * time.Millisecond, 6_000_000},
		// The store's log and tables use its last bytes above the 13 MiB
		// it keeps in reserve (storage.Options.DiskReserve).
		{"state/store", "state", "20m", "128m", time.Hour, 20_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt, resize := mountTmpfs(t, tc.size)
			out, state := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "state")
			if tc.full == "out" {
				out = filepath.Join(mnt, "out")
			} else {
				state = filepath.Join(mnt, "state")
			}
			o := Options{Seeds: w.Seeds(), Dir: out, StateDir: state, Concurrency: concurrency,
				ExpectedURLs: tc.expected, CheckpointInterval: tc.checkpoint}
			o.Politeness.Delay = -1
			o.Fetch.AllowPrivate = true
			o.Fetch.Resolver = w.Resolver()

			c, err := New(o)
			if err == nil {
				err = c.Run(context.Background())
				if cerr := c.Close(); err == nil {
					err = cerr
				}
			}
			if err == nil {
				t.Fatalf("the crawl did not fill %s of %s (pages %d)", tc.size, mnt, c.Stats().Pages)
			}
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), mnt) {
				t.Errorf("crawl on a full disk ended with %q; want ENOSPC and a path under %s", err, mnt)
			}
			pages := c.Stats().Pages
			if pages == 0 {
				t.Errorf("the crawl failed before its first page")
			}
			t.Logf("first run: %d pages, then %v", pages, err)
			if tmp, _ := filepath.Glob(filepath.Join(state, "*.tmp*")); len(tmp) > 0 {
				t.Errorf("partial files left in the state: %v", tmp)
			}

			resize(tc.more)
			if _, err := run(t, context.Background(), o); err != nil {
				t.Fatalf("resumed crawl: %v", err)
			}
			entries := readLog(t, filepath.Join(out, "crawl.log.jsonl"))
			fetched := fetchedURLs(entries)
			all := slices.Compact(slices.Clone(fetched))
			if !slices.Equal(all, want) {
				t.Errorf("union of the runs: %d URLs, want %d; missing %v; unexpected %v",
					len(all), len(want), sampleOf(missingFrom(want, all)), sampleOf(missingFrom(all, want)))
			}
			if n := len(fetched) - len(all); n > concurrency {
				t.Errorf("%d fetches repeated, want at most %d (those under way when the disk filled)", n, concurrency)
			}
			checkWARCRecords(t, out, entries)
		})
	}
}

// checkWARCRecords reads every WARC file under out: a file may end in a
// torn record (ErrTruncated, the write that hit the full disk), which is
// not counted; every log line with a status must name a whole response
// record of its URL.
func checkWARCRecords(t *testing.T, out string, entries []storage.Entry) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "warc", "*.warc.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no WARC files in %s (%v)", out, err)
	}
	responses := map[string]string{} // record ID -> target URI
	torn := 0
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r := storage.NewWARCReader(f)
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, storage.ErrTruncated) {
				torn++
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if rec.Header.Get("WARC-Type") == "response" {
				responses[rec.Header.Get("WARC-Record-ID")] = rec.Header.Get("WARC-Target-URI")
			}
		}
		f.Close()
	}
	if torn > 1 {
		t.Errorf("%d WARC files end in a torn record, want at most 1", torn)
	}
	for _, e := range entries {
		if e.Status == 0 {
			continue
		}
		if uri, ok := responses[e.WARCRecordID]; !ok || uri != e.URL {
			t.Errorf("log line of %s names record %q: in the WARC files for %q", e.URL, e.WARCRecordID, uri)
		}
	}
}
