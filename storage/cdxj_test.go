package storage

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeIndexedCrawl writes a crawl-like warc/ directory under dir: rounds
// of testExchanges, each exchange then a revisit of it, over files rotated
// small so that the index spans several. It returns the WARC files and
// how many response and revisit records they hold.
func writeIndexedCrawl(t *testing.T, dir string, rounds int) ([]string, int) {
	t.Helper()
	w, err := NewWARCWriter(filepath.Join(dir, "warc"), WARCOptions{Prefix: "test", MaxFileSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r := range rounds {
		for i, ex := range testExchanges(uint64(r)) {
			ex.TargetURI = fmt.Sprintf("%s-%d", ex.TargetURI, r%3) // repeated keys across rounds
			ex.Date = ex.Date.Add(time.Duration(r*10+i) * time.Minute)
			ref, err := w.Write(ex)
			if err != nil {
				t.Fatal(err)
			}
			again := *ex
			again.Date = ex.Date.Add(time.Hour)
			if _, err := w.WriteRevisit(&again, Revisit{TargetURI: ex.TargetURI, Date: ex.Date, RecordID: ref.ResponseID}); err != nil {
				t.Fatal(err)
			}
			n += 2
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := CrawlWARCFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files, n
}

// TestCDXJOffsets indexes a crawl's WARC files and checks every line: its
// offset and length cut one whole gzip member out of the file it names,
// which holds the record the line describes (URL, date, payload digest,
// type, status, media type); the lines are sorted; every response and
// revisit has one. The index built in small sorted runs merged from disk
// is byte for byte the one sorted in memory.
func TestCDXJOffsets(t *testing.T) {
	dir := t.TempDir()
	files, want := writeIndexedCrawl(t, dir, 12)
	if len(files) < 3 {
		t.Fatalf("only %d WARC files: the test wants several", len(files))
	}
	var inMemory, spilled bytes.Buffer
	st, err := IndexWARCs(context.Background(), &inMemory, files, IndexOptions{})
	if err != nil || st.Runs != 0 || st.Records != int64(want) || st.Files != len(files) {
		t.Fatalf("IndexWARCs = %+v, %v; want %d records, no runs", st, err, want)
	}
	st, err = IndexWARCs(context.Background(), &spilled, files, IndexOptions{MemoryLimit: 2 << 10, TempDir: t.TempDir()})
	if err != nil || st.Runs < 3 || st.Records != int64(want) {
		t.Fatalf("IndexWARCs with 2 KiB of memory = %+v, %v; want %d records in several runs", st, err, want)
	}
	if !bytes.Equal(inMemory.Bytes(), spilled.Bytes()) {
		t.Fatalf("merged runs differ from the in-memory sort:\n%s\n---\n%s", inMemory.String(), spilled.String())
	}
	lines := strings.SplitAfter(inMemory.String(), "\n")
	lines = lines[:len(lines)-1]
	if len(lines) != want {
		t.Fatalf("%d lines, want %d", len(lines), want)
	}
	seen := map[string]bool{}
	for i, line := range lines {
		if i > 0 && line < lines[i-1] {
			t.Errorf("line %d sorts before line %d:\n%s%s", i, i-1, lines[i-1], line)
		}
		e, err := ParseCDXJLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(e.AppendLine(nil)); got != line {
			t.Errorf("line does not round-trip:\n%s%s", line, got)
		}
		f, err := os.Open(filepath.Join(dir, "warc", e.Filename))
		if err != nil {
			t.Fatal(err)
		}
		member := make([]byte, e.Length)
		if _, err := f.ReadAt(member, e.Offset); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		f.Close()
		zr, err := gzip.NewReader(bytes.NewReader(member))
		if err != nil {
			t.Fatalf("%s: no gzip member at the offset: %v", line, err)
		}
		zr.Multistream(false)
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: the member does not end at offset+length: %v", line, err)
		}
		rec, err := NewWARCReader(bytes.NewReader(raw)).Next()
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		date, _ := time.Parse(time.RFC3339Nano, rec.Header.Get("WARC-Date"))
		typ := rec.Header.Get("WARC-Type")
		if rec.Header.Get("WARC-Target-URI") != e.URL || date.UTC().Format("20060102150405") != e.Timestamp ||
			"sha1:"+e.Digest != rec.Header.Get("WARC-Payload-Digest") || e.Key != SURT(e.URL) ||
			(typ == "revisit") != (e.Mime == "warc/revisit") || (typ != "revisit" && typ != "response") {
			t.Errorf("line %s describes another record: %s %s %s %s", line, typ, rec.Header.Get("WARC-Target-URI"), rec.Header.Get("WARC-Date"), rec.Header.Get("WARC-Payload-Digest"))
		}
		id := rec.Header.Get("WARC-Record-ID")
		if seen[id] {
			t.Errorf("record %s indexed twice", id)
		}
		seen[id] = true
		wantMime, wantStatus := map[string]string{"path": "text/html", "empty": "unk", "bin": "application/octet-stream", "form": "unk"}, map[string]int{"path": 200, "empty": 204, "bin": 200, "form": 301}
		name := strings.TrimPrefix(e.URL[strings.LastIndexByte(e.URL, '/')+1:strings.LastIndexByte(e.URL, '-')], "path?q=1")
		if name == "" {
			name = "path"
		}
		if e.Status != wantStatus[name] || (typ == "response" && e.Mime != wantMime[name]) {
			t.Errorf("%s: status %d mime %q, want %d %q", line, e.Status, e.Mime, wantStatus[name], wantMime[name])
		}
	}
}

// TestWriteCrawlIndex writes a crawl's index in place, checks that a torn
// last record (a crash) leaves the whole records indexed, and that a
// directory that is not a crawl's is refused with nothing written.
func TestWriteCrawlIndex(t *testing.T) {
	dir := t.TempDir()
	files, want := writeIndexedCrawl(t, dir, 2)
	last := files[len(files)-1]
	fi, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, fi.Size()-10); err != nil {
		t.Fatal(err)
	}
	st, err := WriteCrawlIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Torn) != 1 || st.Torn[0] != last || st.Records != int64(want-1) {
		t.Errorf("stats %+v, want %d records and %s torn", st, want-1, last)
	}
	b, err := os.ReadFile(filepath.Join(dir, CrawlIndexPath))
	if err != nil || bytes.Count(b, []byte("\n")) != want-1 {
		t.Errorf("index: %d lines, %v; want %d", bytes.Count(b, []byte("\n")), err, want-1)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "indexes"))
	if len(ents) != 1 {
		t.Errorf("indexes/ holds %d files, want the index alone", len(ents))
	}

	other := t.TempDir()
	if _, err := WriteCrawlIndex(context.Background(), other); !errors.Is(err, ErrNotCrawlDir) {
		t.Errorf("WriteCrawlIndex(not a crawl) = %v, want ErrNotCrawlDir", err)
	}
	if _, err := os.Stat(filepath.Join(other, "indexes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something was written in a directory that is not a crawl's: %v", err)
	}
	// A WARC file that is not one: an error naming it, the old index kept.
	bad := filepath.Join(dir, "warc", "zz.warc.gz")
	if err := os.WriteFile(bad, []byte("not a warc at all\r\n\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteCrawlIndex(context.Background(), dir); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), bad) {
		t.Errorf("WriteCrawlIndex over a corrupt file = %v, want ErrCorrupt naming %s", err, bad)
	}
	if b2, _ := os.ReadFile(filepath.Join(dir, CrawlIndexPath)); !bytes.Equal(b, b2) {
		t.Error("a failed index replaced the previous one")
	}
}

// TestParseCDXJLine reads warcio.js's form (numbers) and pywb's (strings,
// "-" for no status) and rejects lines that are not CDXJ.
func TestParseCDXJLine(t *testing.T) {
	for _, c := range []struct {
		line string
		want CDXJEntry
	}{
		{`com,example)/ 20170306040206 {"url":"http://example.com/","mime":"text/html","status":200,"digest":"G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK","length":1365,"offset":1189,"filename":"example.warc"}`,
			CDXJEntry{Key: "com,example)/", Timestamp: "20170306040206", URL: "http://example.com/", Mime: "text/html", Status: 200, Digest: "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK", Length: 1365, Offset: 1189, Filename: "example.warc"}},
		{`org,iana)/ 20140127171238 {"url": "http://www.iana.org/", "mime": "warc/revisit", "status": "-", "digest": "OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB", "length": "536", "offset": "2678", "filename": "dupes.warc.gz"}` + "\r\n",
			CDXJEntry{Key: "org,iana)/", Timestamp: "20140127171238", URL: "http://www.iana.org/", Mime: "warc/revisit", Digest: "OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB", Length: 536, Offset: 2678, Filename: "dupes.warc.gz"}},
	} {
		got, err := ParseCDXJLine([]byte(c.line))
		if err != nil || got != c.want {
			t.Errorf("ParseCDXJLine(%s) = %+v, %v; want %+v", c.line, got, err, c.want)
		}
	}
	for _, bad := range []string{
		"", "key", "key 2017 {}", "key 20170306040206", "key 20170306040206 {", `key 20170306040206 {"offset":-1}`,
		`key 20170306040206 {"length":"x"}`, `key 20170306040206 {} {}`, `key 2017030604020x {}`, ` 20170306040206 {}`,
	} {
		if _, err := ParseCDXJLine([]byte(bad)); !errors.Is(err, ErrCDXJ) {
			t.Errorf("ParseCDXJLine(%q) = %v, want ErrCDXJ", bad, err)
		}
	}
}

// FuzzParseCDXJLine checks that the parser never panics, that what it
// accepts writes a line it reads back the same, and that its errors match
// ErrCDXJ.
func FuzzParseCDXJLine(f *testing.F) {
	f.Add([]byte(`com,example)/ 20170306040206 {"url":"http://example.com/","mime":"text/html","status":200,"digest":"G7HR","length":1365,"offset":1189,"filename":"example.warc"}`))
	f.Add([]byte(`a 20140127171238 {"status": "-", "length": "536", "offset": "2678"}`))
	f.Add([]byte(`a 20140127171238 {"url": "x\u2028y\n"}` + "\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseCDXJLine(line)
		if err != nil {
			if !errors.Is(err, ErrCDXJ) {
				t.Fatalf("error %v does not match ErrCDXJ", err)
			}
			return
		}
		if bytes.ContainsAny([]byte(e.Key), " \n") {
			return // a key with a line end cannot be written back as one line
		}
		out := e.AppendLine(nil)
		if bytes.Count(out, []byte("\n")) != 1 {
			t.Fatalf("entry %+v writes %q", e, out)
		}
		again, err := ParseCDXJLine(out)
		if err != nil || again != e {
			t.Fatalf("%q parsed as %+v, written as %q, read back as %+v, %v", line, e, out, again, err)
		}
	})
}
