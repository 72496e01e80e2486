package crawl

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/storage"
)

// FuzzScanWARC feeds scanWARC, which reads an earlier crawl's WARC files
// to rebuild its capture history, arbitrary files: it must not panic, and
// must either return captures with a URL and a status or an error that
// wraps ErrPrevious.
func FuzzScanWARC(f *testing.F) {
	dir := f.TempDir()
	w, err := storage.NewWARCWriter(dir, storage.WARCOptions{})
	if err != nil {
		f.Fatal(err)
	}
	u, _ := url.Parse("http://a.example/p")
	date := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	req := storage.RequestHead("GET", u, "", http.Header{"User-Agent": {"t"}})
	ref, err := w.Write(&storage.Exchange{TargetURI: u.String(), Date: date, RequestHead: req,
		Response: []byte("HTTP/1.1 200 OK\r\nETag: \"x\"\r\nContent-Length: 5\r\n\r\nhello"),
		Metadata: storage.AppendWARCField(nil, "hopsFromSeed", "L")})
	if err != nil {
		f.Fatal(err)
	}
	_, err = w.WriteRevisit(&storage.Exchange{TargetURI: u.String(), Date: date.Add(time.Hour), RequestHead: req,
		Response: []byte("HTTP/1.1 304 Not Modified\r\n\r\n"), PayloadDigest: storage.PayloadDigest([]byte("hello"))},
		storage.Revisit{TargetURI: u.String(), Date: date, RecordID: ref.ResponseID, Profile: storage.RevisitNotModified})
	if err != nil {
		f.Fatal(err)
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://b.example/\r\nContent-Length: 19\r\n\r\nHTTP/1.1 404 Nope\r\n\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "x.warc.gz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		err := scanWARC(path, func(c *Capture) error {
			if c.URL == "" || c.Status == 0 {
				t.Errorf("capture without URL or status: %+v", c)
			}
			return nil
		})
		if err != nil && !errors.Is(err, ErrPrevious) {
			t.Errorf("error %v does not wrap ErrPrevious", err)
		}
	})
}

// FuzzResponseLocation decodes the import's record locations (kept in the
// state while earlier crawls are imported, so possibly cut by a crash):
// anything decodes or fails without panicking, and what decodes encodes
// back to a value that decodes the same.
func FuzzResponseLocation(f *testing.F) {
	f.Add(responseLocation{File: "/a/warc/x.warc.gz", Offset: 1234, Length: 99}.encode())
	f.Add([]byte(`{"a":"f","o":-1}`))
	f.Add([]byte(`{"a":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResponseLocation(b)
		if err != nil {
			return
		}
		again, err := decodeResponseLocation(r.encode())
		if err != nil || again != r {
			t.Fatalf("%+v encodes to %s, which decodes to %+v, %v", r, r.encode(), again, err)
		}
	})
}
