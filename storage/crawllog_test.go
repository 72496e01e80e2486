package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func readLog(t *testing.T, path string) []Entry {
	t.Helper()
	entries, err := ReadCrawlLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestCrawlLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "crawl.log.jsonl")
	l, err := OpenCrawlLog(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 21, 18, 4, 5, 123456789, time.FixedZone("CET", 3600))
	in := []Entry{
		{URL: "http://a.example/", Status: 200, ContentType: "text/html; charset=utf-8", Bytes: 1234, Depth: 0, FetchedAt: at, DurationMS: 12.5, IP: "127.0.0.1", WARCFile: "x.warc.gz", WARCRecordID: "<urn:uuid:1>"},
		{URL: "http://a.example/r", Status: 301, Location: "http://a.example/<b>&", Depth: 1, Via: "http://a.example/", FetchedAt: at},
		{URL: "http://b.example/x", Status: 0, Error: "dial tcp: connection refused", Depth: 2, Via: "http://a.example/", FetchedAt: at, Truncated: "length"},
	}
	for _, e := range in {
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(in[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	raw, _ := os.ReadFile(path)
	// Field names and formats are a contract with log readers: check the text.
	for _, want := range []string{`"url":"http://a.example/"`, `"status":0`, `"error":""`, `"content_type":"text/html; charset=utf-8"`,
		`"bytes":1234`, `"depth":2`, `"via":""`, `"fetched_at":"2026-11-21T17:04:05.123456789Z"`, `"duration_ms":12.5`,
		`"location":"http://a.example/<b>&"`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("log lacks %s:\n%s", want, raw)
		}
	}
	got := readLog(t, path)
	if len(got) != len(in) {
		t.Fatalf("read %d entries, want %d", len(got), len(in))
	}
	for i := range in {
		want := in[i]
		want.FetchedAt = want.FetchedAt.UTC()
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("entry %d: got %+v, want %+v", i, got[i], want)
		}
	}
}

func TestCrawlLogTornLine(t *testing.T) {
	cases := []struct {
		name     string
		existing string
		wantTorn int64
		wantURLs string
	}{
		{"empty", "", 0, "new"},
		{"whole lines", `{"url":"a"}` + "\n" + `{"url":"b"}` + "\n", 0, "a,b,new"},
		{"torn last line", `{"url":"a"}` + "\n" + `{"url":"b","sta`, int64(len(`{"url":"b","sta`)), "a,new"},
		{"only a torn line", `{"url":"a"`, int64(len(`{"url":"a"`)), "new"},
		{"torn line longer than a read chunk", `{"url":"a"}` + "\n" + `{"url":"` + strings.Repeat("x", 200<<10), int64(len(`{"url":"`) + 200<<10), "a,new"},
		{"line longer than a read chunk", `{"url":"` + strings.Repeat("y", 100<<10) + `"}` + "\n", 0, strings.Repeat("y", 100<<10) + ",new"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crawl.log.jsonl")
			if err := os.WriteFile(path, []byte(c.existing), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := OpenCrawlLog(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.TornBytes(); got != c.wantTorn {
				t.Errorf("TornBytes = %d, want %d", got, c.wantTorn)
			}
			if err := l.Write(Entry{URL: "new"}); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			var urls []string
			for _, e := range readLog(t, path) {
				urls = append(urls, e.URL)
			}
			if got := strings.Join(urls, ","); got != c.wantURLs {
				t.Errorf("URLs = %.80s, want %.80s", got, c.wantURLs)
			}
		})
	}
}

func TestReadCrawlLog(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    int
		corrupt bool
	}{
		{"torn last line skipped", `{"url":"a"}` + "\n" + `{"url":`, 1, false},
		{"bad middle line", `{"url":"a"}` + "\n" + `{"url":` + "\n" + `{"url":"c"}` + "\n", 1, true},
		{"not an object", `{"url":"a"}` + "\n" + `null` + "\n", 1, true},
		{"empty line", "\n", 0, true},
		{"wrong type", `{"status":"200"}` + "\n", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			err := ReadCrawlLog(strings.NewReader(c.in), func(Entry) error { n++; return nil })
			if got := errors.Is(err, ErrCorrupt); got != c.corrupt {
				t.Errorf("err = %v, want corrupt=%v", err, c.corrupt)
			}
			if n != c.want {
				t.Errorf("entries = %d, want %d", n, c.want)
			}
		})
	}
}

func TestCrawlLogConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log.jsonl")
	l, err := OpenCrawlLog(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := l.Write(Entry{URL: fmt.Sprintf("http://h%d/%d", w, i), Status: 200}); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					if err := l.Sync(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range readLog(t, path) {
		if seen[e.URL] {
			t.Errorf("duplicate line for %s", e.URL)
		}
		seen[e.URL] = true
	}
	if len(seen) != writers*each {
		t.Errorf("lines = %d, want %d", len(seen), writers*each)
	}
}

func FuzzReadCrawlLog(f *testing.F) {
	f.Add([]byte(`{"url":"a","status":200}` + "\n"))
	f.Add([]byte(`{"url":"a"}` + "\n" + `{"url":`))
	f.Add([]byte("null\n"))
	f.Add([]byte("{}\n{}\n"))
	f.Add([]byte(`{"fetched_at":"2026-01-01T00:00:00Z"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		err := ReadCrawlLog(bytes.NewReader(data), func(Entry) error { n++; return nil })
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not match ErrCorrupt", err)
		}
		if lines := bytes.Count(data, []byte("\n")); n > lines {
			t.Fatalf("%d entries from %d lines", n, lines)
		}
	})
}
