package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/storage"
)

// checkWARC checks that the WARC files under out/warc match the crawl log:
// every log line of a response names a response record of its URL in its
// file, whose payload digest is right and which has a request record; and
// every response record is either a robots.txt fetch or in the log, except
// at most extra records (fetches in flight at a kill, archived but not
// logged). A kill may also leave one torn record pair at a file's end.
func checkWARC(t *testing.T, out string, entries []storage.Entry, extra int, tornOK bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "warc", "*.warc.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no WARC files in %s (%v)", out, err)
	}
	type rec struct {
		file, uri string
	}
	responses := map[string]rec{} // record ID -> where and what
	requests := map[string]int{}  // target URI -> request records
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r := storage.NewWARCReader(f)
		for {
			rc, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, storage.ErrTruncated) && tornOK {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			uri := rc.Header.Get("WARC-Target-URI")
			switch rc.Header.Get("WARC-Type") {
			case "request":
				requests[uri]++
			case "response":
				id := rc.Header.Get("WARC-Record-ID")
				if rc.Header.Get("WARC-Date") == "" || id == "" {
					t.Errorf("%s: response record of %s without date or id", path, uri)
				}
				// The payload is the entity body after the HTTP head, with
				// the transfer coding removed and the content coding kept.
				if want, err := storage.ResponsePayloadDigest(rc.Block); err != nil {
					t.Errorf("%s: response record of %s: %v", path, uri, err)
				} else if got := rc.Header.Get("WARC-Payload-Digest"); got != want {
					t.Errorf("%s: payload digest of %s is %s, want %s", path, uri, got, want)
				}
				responses[id] = rec{filepath.Base(path), uri}
			}
		}
		f.Close()
	}
	logged := map[string]bool{}
	for _, e := range entries {
		if e.Status == 0 {
			continue
		}
		r, ok := responses[e.WARCRecordID]
		switch {
		case !ok:
			t.Errorf("log line of %s names record %q, not in the WARC files", e.URL, e.WARCRecordID)
			continue
		case r.uri != e.URL || r.file != e.WARCFile:
			t.Errorf("log line of %s names %s in %s; the record is of %s in %s", e.URL, e.WARCRecordID, e.WARCFile, r.uri, r.file)
		case requests[e.URL] == 0:
			t.Errorf("no request record of %s", e.URL)
		}
		logged[e.WARCRecordID] = true
	}
	unlogged := 0
	for id, r := range responses {
		if !logged[id] && !strings.HasSuffix(r.uri, "/robots.txt") {
			unlogged++
		}
	}
	if unlogged > extra {
		t.Errorf("%d response records without a log line, want at most %d", unlogged, extra)
	}
}
