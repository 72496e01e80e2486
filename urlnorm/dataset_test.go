package urlnorm

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// forEachLine calls fn for every step-th line of a gzipped URL list (all
// lines when step is 1). Lines of any length are read whole. Under -race the
// file is decompressed by an external gzip when one is installed: the
// instrumented compress/gzip alone takes most of a minute for the 1.5M URLs.
func forEachLine(tb testing.TB, path string, step int, fn func(line string)) {
	tb.Helper()
	var r io.Reader
	if gz, err := exec.LookPath("gzip"); err == nil && raceEnabled {
		cmd := exec.Command(gz, "-dc", path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			tb.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		defer func() {
			if err := cmd.Wait(); err != nil {
				tb.Errorf("gzip -dc %s: %v", path, err)
			}
		}()
		r = out
	} else {
		f, err := os.Open(path)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for i := 0; sc.Scan(); i++ {
		if i%step == 0 {
			fn(sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

// TestDatasets normalizes every URL of ../shared/datasets (under -race or
// -short, a deterministic 1-in-16 sample, to keep CI time modest), checking that
// every error is an *Error with an actionable cause, that every result is
// idempotent, in RFC 3986 form, split by SplitCanonical as net/url parses
// it, and re-joins from its segments, and reports the error rate per
// file and per cause.
func TestDatasets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(sharedPath(t, "datasets"), "*.txt.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.txt.gz in the shared datasets: %v", err)
	}
	step := 1
	if raceEnabled || testing.Short() {
		step = 16
	}
	n := mustNew(t, Options{})
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".txt.gz")
		t.Run(name, func(t *testing.T) {
			var total, failed, changed int
			byCause := map[string]int{}
			example := map[string]string{}
			var segs []string
			forEachLine(t, path, step, func(line string) {
				total++
				got, err := n.Normalize(line)
				if err != nil {
					failed++
					checkError(t, err)
					var c *causeError
					errors.As(err, &c)
					k := strings.TrimPrefix(c.sentinel.Error(), "urlnorm: ")
					byCause[k]++
					if _, ok := example[k]; !ok {
						example[k] = err.Error()
					}
					return
				}
				if got != line {
					changed++
				}
				if again, err := n.Normalize(got); err != nil || again != got {
					t.Errorf("Normalize(%q) = %q, then %q, %v: not idempotent", line, got, again, err)
				}
				if err := checkRFC3986Form(got); err != nil {
					t.Errorf("Normalize(%q) = %q: %v", line, got, err)
				}
				// SplitCanonical agrees with net/url on every real URL.
				scheme, host, hostname, ok := SplitCanonical(got)
				if u, err := url.Parse(got); ok != (err == nil && u.Host != "") || ok && (scheme != u.Scheme || host != u.Host || hostname != u.Hostname()) {
					t.Errorf("SplitCanonical(%q) = %q, %q, %q, %v; net/url gives %+v, %v", got, scheme, host, hostname, ok, u, err)
				}
				segs = n.AppendSegments(segs[:0], got)
				if j := strings.Join(segs, "/"); j != got {
					t.Errorf("Segments(%q) re-join to %q", got, j)
				}
			})
			if total == 0 {
				t.Fatal("no URLs read")
			}
			rate := float64(failed) / float64(total)
			t.Logf("%s: %d URLs (every %d-th line), %d changed by normalization, %d errors (%.3f%%)", name, total, step, changed, failed, 100*rate)
			causes := make([]string, 0, len(byCause))
			for k := range byCause {
				causes = append(causes, k)
			}
			sort.Strings(causes)
			for _, k := range causes {
				t.Logf("  %6d %s, e.g. %s", byCause[k], k, example[k])
			}
			// The sets hold absolute http(s) URLs: a parser regression
			// shows up as a jump in the error rate.
			if rate > 0.01 {
				t.Errorf("error rate %.3f%% is above 1%%: %s", 100*rate, fmt.Sprint(byCause))
			}
		})
	}
}
