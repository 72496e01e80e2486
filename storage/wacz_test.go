package storage

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSiteCrawl writes a small crawl output directory: a seed page (a
// redirect to it first, then the page), a second HTML page in
// ISO-8859-1, a stylesheet and an image, with their crawl log lines.
func writeSiteCrawl(t *testing.T, dir string) {
	t.Helper()
	w, err := NewWARCWriter(filepath.Join(dir, "warc"), WARCOptions{Prefix: "site", MaxFileSize: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	log, err := OpenCrawlLog(filepath.Join(dir, "crawl.log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	pages := []struct {
		url, ct, body string
		status        int
		depth         int
		via           string
	}{
		{"http://site.test/", "", "", 301, 0, ""},
		{"http://site.test/index.html", "text/html; charset=utf-8", "<html><head><title>Seed \u2014\n  page</title><link rel=stylesheet href=s.css></head><body><img src=i.png><a href=p2.html>2</a></body></html>", 200, 0, ""},
		{"http://site.test/s.css", "text/css", "body{color:rgb(1,2,3)}", 200, 1, "http://site.test/index.html"},
		{"http://site.test/i.png", "image/png", "\x89PNG\r\n\x1a\nnot really", 200, 1, "http://site.test/index.html"},
		{"http://site.test/p2.html", "text/html; charset=iso-8859-1", "<title>Caf\xe9</title><p>two", 200, 1, "http://site.test/index.html"},
	}
	for i, p := range pages {
		u, _ := url.Parse(p.url)
		h := http.Header{}
		if p.ct != "" {
			h.Set("Content-Type", p.ct)
		}
		if p.status == 301 {
			h.Set("Location", "http://site.test/index.html")
		}
		ref, err := w.Write(&Exchange{TargetURI: p.url, Date: date.Add(time.Duration(i) * time.Second),
			RequestHead:  RequestHead("GET", u, "", nil),
			ResponseHead: ResponseHead("HTTP/1.1", p.status, h, len(p.body)), Body: []byte(p.body)})
		if err != nil {
			t.Fatal(err)
		}
		if err := log.Write(Entry{URL: p.url, Status: p.status, Depth: p.depth, Via: p.via, WARCFile: ref.File, WARCRecordID: ref.ResponseID}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPackWACZ packs a crawl and checks the package: the layout, every
// entry stored (not deflated) with its sizes in its local header, the
// WARC files byte for byte, datapackage.json's fields and each
// resource's SHA-256 and size against the bytes in the zip,
// datapackage-digest.json's hash of datapackage.json, the index, and
// pages.jsonl (header, the seeds first, HTML pages with their titles).
func TestPackWACZ(t *testing.T) {
	dir := t.TempDir()
	writeSiteCrawl(t, dir)
	out := filepath.Join(t.TempDir(), "site.wacz")
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	st, err := PackWACZ(context.Background(), dir, out, WACZOptions{Software: "layercrawl test", now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := CrawlWARCFiles(dir)
	if st.WARCFiles != len(files) || len(files) < 2 || st.Records != 5 || st.Seeds != 2 || st.Pages != 3 {
		t.Errorf("stats %+v; want %d WARC files (several), 5 records, 2 seeds, 3 pages", st, len(files))
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if fi, _ := os.Stat(out); fi.Size() != st.Bytes {
		t.Errorf("WACZ is %d bytes, stats say %d", fi.Size(), st.Bytes)
	}
	content := map[string][]byte{}
	var names []string
	for _, f := range zr.File {
		if !f.Modified.Equal(now) {
			t.Errorf("%s: modified %v, want %v", f.Name, f.Modified, now)
		}
		if f.Method != zip.Store || f.Flags&0x8 != 0 || f.CompressedSize64 != f.UncompressedSize64 {
			t.Errorf("%s: method %d flags %#x: want stored, sizes in the local header", f.Name, f.Method, f.Flags)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		content[f.Name] = b
		names = append(names, f.Name)
	}
	var want []string
	for _, f := range files {
		want = append(want, "archive/"+filepath.Base(f))
		b, _ := os.ReadFile(f)
		if !bytes.Equal(content["archive/"+filepath.Base(f)], b) {
			t.Errorf("%s differs from the crawl's file", f)
		}
	}
	want = append(want, "indexes/index.cdxj", "pages/pages.jsonl", "datapackage.json", "datapackage-digest.json")
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("entries\n%v\nwant\n%v", names, want)
	}

	var dp struct {
		Profile, WACZVersion, Title, Created, Software, MainPageURL, MainPageDate string
		Resources                                                                 []struct {
			Name, Path, Hash string
			Bytes            int64
		}
	}
	if err := json.Unmarshal(bytes.ReplaceAll(content["datapackage.json"], []byte(`"wacz_version"`), []byte(`"waczversion"`)), &dp); err != nil {
		t.Fatal(err)
	}
	if dp.Profile != "data-package" || dp.WACZVersion != "1.1.1" || dp.Created != "2026-11-28T10:00:00Z" || dp.Software != "layercrawl test" ||
		dp.MainPageURL != "http://site.test/" || dp.MainPageDate != "2026-11-28T09:00:00Z" || dp.Title != "layercrawl crawl of http://site.test/" {
		t.Errorf("datapackage.json: %+v", dp)
	}
	if len(dp.Resources) != len(want)-2 {
		t.Errorf("%d resources, want %d", len(dp.Resources), len(want)-2)
	}
	for i, r := range dp.Resources {
		b, ok := content[r.Path]
		sum := sha256.Sum256(b)
		if !ok || r.Path != want[i] || r.Name != filepath.Base(r.Path) || r.Bytes != int64(len(b)) || r.Hash != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("resource %+v does not match the entry (%d bytes, sha256 %x)", r, len(b), sum)
		}
	}
	var digest struct{ Path, Hash string }
	if err := json.Unmarshal(content["datapackage-digest.json"], &digest); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(content["datapackage.json"]); digest.Path != "datapackage.json" || digest.Hash != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("datapackage-digest.json %+v, want sha256 %x", digest, sum)
	}

	var index bytes.Buffer
	if _, err := IndexWARCs(context.Background(), &index, files, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(content["indexes/index.cdxj"], index.Bytes()) {
		t.Errorf("the packed index differs from IndexWARCs's:\n%s", content["indexes/index.cdxj"])
	}

	lines := strings.Split(strings.TrimSuffix(string(content["pages/pages.jsonl"]), "\n"), "\n")
	wantPages := []string{`{"format":"json-pages-1.0","id":"pages","title":"All Pages"}`,
		`"url":"http://site.test/","ts":"2026-11-28T09:00:00Z"}`,
		`"url":"http://site.test/index.html","ts":"2026-11-28T09:00:01Z","title":"Seed — page"}`,
		`"url":"http://site.test/p2.html","ts":"2026-11-28T09:00:04Z","title":"Café"}`}
	if len(lines) != len(wantPages) {
		t.Fatalf("pages.jsonl:\n%s", content["pages/pages.jsonl"])
	}
	for i, l := range lines {
		if !strings.HasSuffix(l, wantPages[i]) {
			t.Errorf("pages.jsonl line %d: %s\nwant it to end %s", i, l, wantPages[i])
		}
	}
}

// TestPackWACZFails checks that a failed pack leaves out as it was and no
// temporary file behind: a directory that is not a crawl's, and a crawl
// with a WARC file that does not parse.
func TestPackWACZFails(t *testing.T) {
	outDir := t.TempDir()
	out := filepath.Join(outDir, "x.wacz")
	if _, err := PackWACZ(context.Background(), t.TempDir(), out, WACZOptions{}); !errors.Is(err, ErrNotCrawlDir) {
		t.Errorf("PackWACZ(not a crawl) = %v, want ErrNotCrawlDir", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed pack created %s: %v", out, err)
	}
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeSiteCrawl(t, dir)
	bad := filepath.Join(dir, "warc", "zz.warc.gz")
	if err := os.WriteFile(bad, []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xffgarbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PackWACZ(context.Background(), dir, out, WACZOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), bad) {
		t.Errorf("PackWACZ over a corrupt WARC = %v, want ErrCorrupt naming %s", err, bad)
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("a failed pack replaced %s", out)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
		t.Errorf("%s holds %d entries after a failed pack, want x.wacz alone", outDir, len(ents))
	}
}

// TestPackWACZWorkerLog reads the seeds from a Redis worker's log
// (crawl-WORKER.log.jsonl) as from a local crawl's.
func TestPackWACZWorkerLog(t *testing.T) {
	dir := t.TempDir()
	writeSiteCrawl(t, dir)
	if err := os.Rename(filepath.Join(dir, "crawl.log.jsonl"), filepath.Join(dir, "crawl-w1.log.jsonl")); err != nil {
		t.Fatal(err)
	}
	st, err := PackWACZ(context.Background(), dir, filepath.Join(t.TempDir(), "w.wacz"), WACZOptions{})
	if err != nil || st.Seeds != 2 || st.Pages != 3 {
		t.Errorf("PackWACZ with a worker's log = %+v, %v; want 2 seeds of 3 pages", st, err)
	}
}

// TestPackWACZCompressedIndex packs a crawl whose index is past
// CompressIndexAbove: the package holds indexes/index.cdx.gz and
// index.idx instead of index.cdxj, each idx line names the first key and
// timestamp of a gzip member it locates, the members tile the file, and
// together they hold the index IndexWARCs writes.
func TestPackWACZCompressedIndex(t *testing.T) {
	dir := t.TempDir()
	files, n := writeIndexedCrawl(t, dir, 6)
	out := filepath.Join(t.TempDir(), "c.wacz")
	st, err := PackWACZ(context.Background(), dir, out, WACZOptions{CompressIndexAbove: 10, IndexBlockLines: 7})
	if err != nil || st.Records != int64(n) {
		t.Fatalf("PackWACZ = %+v, %v; want %d records", st, err, n)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	read := func(name string) []byte {
		f, err := zr.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := zr.Open("indexes/index.cdxj"); err == nil {
		t.Error("the package holds index.cdxj besides index.cdx.gz")
	}
	gz, idx := read("indexes/index.cdx.gz"), read("indexes/index.idx")
	if dp := read("datapackage.json"); !bytes.Contains(dp, []byte(`"indexes/index.cdx.gz"`)) || !bytes.Contains(dp, []byte(`"indexes/index.idx"`)) {
		t.Errorf("datapackage.json does not list the compressed index:\n%s", dp)
	}
	lines := strings.Split(strings.TrimSuffix(string(idx), "\n"), "\n")
	if lines[0] != `!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}` {
		t.Errorf("idx header %q", lines[0])
	}
	if want := (n + 6) / 7; len(lines)-1 != want {
		t.Errorf("%d blocks, want %d", len(lines)-1, want)
	}
	var all bytes.Buffer
	next := int64(0)
	for _, l := range lines[1:] {
		e, err := ParseCDXJLine([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if e.Offset != next || e.Filename != "index.cdx.gz" {
			t.Errorf("idx line %s: want offset %d", l, next)
		}
		next = e.Offset + e.Length
		zr, err := gzip.NewReader(bytes.NewReader(gz[e.Offset : e.Offset+e.Length]))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		block, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if c := bytes.Count(block, []byte("\n")); c < 1 || c > 7 || !bytes.HasPrefix(block, []byte(e.Key+" "+e.Timestamp+" ")) {
			t.Errorf("block at %d: %d lines, starting %.60q; want up to 7 starting with %s %s", e.Offset, c, block, e.Key, e.Timestamp)
		}
		all.Write(block)
	}
	if next != int64(len(gz)) {
		t.Errorf("blocks end at %d of %d bytes", next, len(gz))
	}
	var want bytes.Buffer
	if _, err := IndexWARCs(context.Background(), &want, files, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(all.Bytes(), want.Bytes()) {
		t.Error("the blocks of index.cdx.gz do not hold the index")
	}
}
