package crawl

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreviousHistoryGaps checks the two things a capture history lacked
// where it names a record only by id, or was rebuilt from WARC files:
// the depth of a page that is not HTML (no metadata record: the crawl log
// gives it), and the WARC file and offset of the response a revisit
// refers to (a within-crawl revisit names only the response's id; it is
// looked up among the earlier crawls' responses), in both the state's
// history and the rebuilt one.
func TestPreviousHistoryGaps(t *testing.T) {
	dup := "<html><body>" + strings.Repeat("the same words again ", 100) + "</body></html>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, page("root", "/a"))
		case "/a":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, page("a", "/file.bin", "/dup1", "/dup2"))
		case "/file.bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			io.WriteString(w, strings.Repeat("\x00\x01binary", 50))
		case "/dup1", "/dup2":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, dup)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, rebuild := range []bool{false, true} {
		name := "state"
		if rebuild {
			name = "rebuilt"
		}
		t.Run(name, func(t *testing.T) {
			first := t.TempDir()
			o := Options{Dir: first, Seeds: []string{srv.URL + "/"}, Concurrency: 1, ExpectedURLs: 10_000}
			o.Politeness.Delay = -1
			o.Fetch.AllowPrivate = true
			if _, err := run(t, context.Background(), o); err != nil {
				t.Fatal(err)
			}
			var revisit string // the URL archived as a revisit of the other's response
			for _, e := range readLog(t, filepath.Join(first, "crawl.log.jsonl")) {
				if e.DuplicateOf != "" {
					revisit = e.URL
				}
			}
			if revisit == "" {
				t.Fatal("the first crawl archived neither /dup1 nor /dup2 as a revisit")
			}
			if rebuild {
				if err := os.RemoveAll(filepath.Join(first, "state")); err != nil {
					t.Fatal(err)
				}
			}
			o.Dir, o.Previous = t.TempDir(), []string{first}
			c, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()

			bin, err := c.previousCapture(srv.URL + "/file.bin")
			if err != nil || bin == nil {
				t.Fatalf("capture of /file.bin: %v, %v", bin, err)
			}
			if bin.Depth != 2 || bin.Hops != "LL" {
				t.Errorf("/file.bin: depth %d, hops %q; want 2, \"LL\"", bin.Depth, bin.Hops)
			}

			rv, err := c.previousCapture(revisit)
			if err != nil || rv == nil {
				t.Fatalf("capture of %s: %v, %v", revisit, rv, err)
			}
			if rv.WARCFile == "" {
				t.Fatalf("%s: the revisit's capture names no WARC file (record %s)", revisit, rv.RecordID)
			}
			// readPreviousBody checks that the record at the offset is
			// the one the capture names.
			body, _, err := readPreviousBody(rv, 1<<20)
			if err != nil {
				t.Fatalf("%s: reading the response it refers to: %v", revisit, err)
			}
			if string(body) != dup {
				t.Errorf("%s: the response it refers to holds %q, want the duplicated page", revisit, body)
			}
			left := 0
			if err := c.captures.Ascend([]byte(recordPrefix), []byte("x/r0"), func(_, _ []byte) bool { left++; return true }); err != nil {
				t.Fatal(err)
			}
			if left > 0 {
				t.Errorf("the import left %d record locations behind", left)
			}
		})
	}
}
