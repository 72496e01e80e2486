package storage

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	recordIDRE = regexp.MustCompile(`^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$`)
	fileNameRE = regexp.MustCompile(`^test-\d{17}-(\d{5})\.warc\.gz$`)
)

// testExchanges returns a varied set of exchanges; seed makes bodies differ.
func testExchanges(seed uint64) []*Exchange {
	rng := rand.New(rand.NewPCG(seed, 1))
	binary := make([]byte, 3000)
	for i := range binary {
		binary[i] = byte(rng.UintN(256))
	}
	date := time.Date(2026, 11, 21, 17, 0, 0, 123456789, time.UTC)
	u, _ := url.Parse("http://a.example/path?q=1")
	req := RequestHead("GET", u, "", http.Header{"User-Agent": {"layercrawl-test"}, "Accept": {"*/*"}})
	return []*Exchange{
		{TargetURI: "http://a.example/path?q=1", IP: "127.0.0.1", Date: date, RequestHead: req,
			ResponseHead: ResponseHead("HTTP/1.1", 200, http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Content-Encoding": {"gzip"}}, 19),
			Body:         []byte("<html>héllo</html>"),
			Metadata:     AppendWARCField([]byte("hopsFromSeed: LL\r\n"), "outlink", "http://a.example/x L a/@href")},
		{TargetURI: "http://a.example/empty", Date: date.Add(time.Second), RequestHead: req,
			ResponseHead: ResponseHead("", 204, nil, 0)},
		{TargetURI: "https://b.example/bin", IP: "::1", Date: date.Add(2 * time.Second), RequestHead: req,
			ResponseHead: ResponseHead("HTTP/1.1", 200, http.Header{"Content-Type": {"application/octet-stream"}}, len(binary)),
			Body:         binary, Truncated: "length"},
		{TargetURI: "http://a.example/form", Date: date.Add(3 * time.Second),
			RequestHead:  []byte("POST /form HTTP/1.1\r\nHost: a.example\r\nContent-Length: 3\r\n"),
			RequestBody:  []byte("a=b"),
			ResponseHead: []byte("HTTP/1.1 301 Moved Permanently\r\nLocation: http://a.example/\r\nContent-Length: 0\r\n\r\n")},
	}
}

type warcFile struct {
	name    string
	records []*WARCRecord
}

func readWARCDir(t *testing.T, dir string) []warcFile {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []warcFile
	for _, p := range names {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		r := NewWARCReader(f)
		wf := warcFile{name: filepath.Base(p)}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: record %d: %v", p, len(wf.records), err)
			}
			wf.records = append(wf.records, rec)
		}
		f.Close()
		out = append(out, wf)
	}
	return out
}

func blockDigest(b []byte) string {
	s := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// checkWARCFile checks the structure of one file: warcinfo first, then
// request/response pairs linked to each other, with correct digests and
// lengths. It returns the pairs.
func checkWARCFile(t *testing.T, wf warcFile) [][2]*WARCRecord {
	t.Helper()
	if len(wf.records) == 0 || wf.records[0].Header.Get("WARC-Type") != "warcinfo" {
		t.Fatalf("%s: does not start with warcinfo", wf.name)
	}
	info := wf.records[0]
	if got := info.Header.Get("WARC-Filename"); got != wf.name {
		t.Errorf("%s: WARC-Filename %q", wf.name, got)
	}
	if !bytes.Contains(info.Block, []byte("format: WARC File Format 1.1\r\n")) {
		t.Errorf("%s: warcinfo block %q", wf.name, info.Block)
	}
	ids := map[string]bool{}
	for _, rec := range wf.records {
		h := rec.Header
		if rec.Version != "WARC/1.1" {
			t.Errorf("version %q", rec.Version)
		}
		id := h.Get("WARC-Record-ID")
		if !recordIDRE.MatchString(id) || ids[id] {
			t.Errorf("bad or repeated WARC-Record-ID %q", id)
		}
		ids[id] = true
		if _, err := time.Parse(time.RFC3339Nano, h.Get("WARC-Date")); err != nil || !strings.HasSuffix(h.Get("WARC-Date"), "Z") {
			t.Errorf("WARC-Date %q: %v", h.Get("WARC-Date"), err)
		}
		if got, want := h.Get("Content-Length"), fmt.Sprint(len(rec.Block)); got != want {
			t.Errorf("Content-Length %s, block %s", got, want)
		}
		if got, want := h.Get("WARC-Block-Digest"), blockDigest(rec.Block); got != want {
			t.Errorf("WARC-Block-Digest %s, want %s", got, want)
		}
	}
	var pairs [][2]*WARCRecord
	rest := wf.records[1:]
	for i := 0; i < len(rest); i += 2 {
		if i+1 >= len(rest) {
			t.Fatalf("%s: %d records after warcinfo, want pairs (each maybe with its metadata)", wf.name, len(rest))
		}
		req, resp := rest[i], rest[i+1]
		revisit := resp.Header.Get("WARC-Type") == "revisit"
		if req.Header.Get("WARC-Type") != "request" || resp.Header.Get("WARC-Type") != "response" && !revisit {
			t.Fatalf("pair %d: types %s, %s", i/2, req.Header.Get("WARC-Type"), resp.Header.Get("WARC-Type"))
		}
		if i+2 < len(rest) && rest[i+2].Header.Get("WARC-Type") == "metadata" {
			meta := rest[i+2]
			i++
			if meta.Header.Get("WARC-Concurrent-To") != resp.Header.Get("WARC-Record-ID") ||
				meta.Header.Get("WARC-Target-URI") != resp.Header.Get("WARC-Target-URI") ||
				meta.Header.Get("Content-Type") != "application/warc-fields" || len(meta.Block) == 0 {
				t.Errorf("metadata record after pair %d: %v", i/2, meta.Header)
			}
		}
		if req.Header.Get("WARC-Concurrent-To") != resp.Header.Get("WARC-Record-ID") ||
			resp.Header.Get("WARC-Concurrent-To") != req.Header.Get("WARC-Record-ID") {
			t.Errorf("pair %d: not linked by WARC-Concurrent-To", i/2)
		}
		if req.Header.Get("Content-Type") != "application/http;msgtype=request" ||
			resp.Header.Get("Content-Type") != "application/http;msgtype=response" {
			t.Errorf("pair %d: content types %q, %q", i/2, req.Header.Get("Content-Type"), resp.Header.Get("Content-Type"))
		}
		_, payload, ok := HTTPPayload(req.Block)
		if !ok {
			t.Fatalf("pair %d: request block without HTTP head", i/2)
		}
		if got, want := req.Header.Get("WARC-Payload-Digest"), sha1Digest(payload); got != want {
			t.Errorf("pair %d: request WARC-Payload-Digest %s, want %s", i/2, got, want)
		}
		// A response's payload as net/http reads it, where it can read
		// it whole (the raw-response tests check the others).
		ref, ok := referenceResponse(resp.Block)
		switch {
		case revisit:
			// The payload is the referred-to response's.
			if ok && len(ref.payload) != 0 || resp.Header.Get("WARC-Profile") != RevisitProfile {
				t.Errorf("pair %d: revisit with %d payload bytes, profile %q", i/2, len(ref.payload), resp.Header.Get("WARC-Profile"))
			}
		case ok:
			if got, want := resp.Header.Get("WARC-Payload-Digest"), sha1Digest(ref.payload); got != want {
				t.Errorf("pair %d: WARC-Payload-Digest %s, want %s", i/2, got, want)
			}
		}
		pairs = append(pairs, [2]*WARCRecord{req, resp})
	}
	return pairs
}

func TestWARCRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "test", Info: map[string]string{"operator": "tests", "isPartOf": "round-trip"}})
	if err != nil {
		t.Fatal(err)
	}
	exs := testExchanges(1)
	var refs []WARCRef
	for _, ex := range exs {
		ref, err := w.Write(ex)
		if err != nil {
			t.Fatalf("Write(%s): %v", ex.TargetURI, err)
		}
		refs = append(refs, ref)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(exs[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	files := readWARCDir(t, dir)
	if len(files) != 1 {
		t.Fatalf("%d files, want 1", len(files))
	}
	if !fileNameRE.MatchString(files[0].name) {
		t.Errorf("file name %q", files[0].name)
	}
	if info := files[0].records[0].Block; !bytes.Contains(info, []byte("isPartOf: round-trip\r\noperator: tests\r\n")) {
		t.Errorf("warcinfo lacks the Info fields in name order:\n%s", info)
	}
	pairs := checkWARCFile(t, files[0])
	if len(pairs) != len(exs) {
		t.Fatalf("%d pairs, want %d", len(pairs), len(exs))
	}
	for i, ex := range exs {
		req, resp := pairs[i][0], pairs[i][1]
		for _, rec := range pairs[i] {
			if got := rec.Header.Get("WARC-Target-URI"); got != ex.TargetURI {
				t.Errorf("%d: WARC-Target-URI %q, want %q", i, got, ex.TargetURI)
			}
			if got, want := rec.Header.Get("WARC-Date"), ex.Date.UTC().Format(warcDateFormat); got != want {
				t.Errorf("%d: WARC-Date %q, want %q", i, got, want)
			}
			if got := rec.Header.Get("WARC-IP-Address"); got != ex.IP {
				t.Errorf("%d: WARC-IP-Address %q, want %q", i, got, ex.IP)
			}
		}
		if got := resp.Header.Get("WARC-Truncated"); got != ex.Truncated {
			t.Errorf("%d: WARC-Truncated %q, want %q", i, got, ex.Truncated)
		}
		head, body, _ := HTTPPayload(resp.Block)
		if !bytes.Equal(body, ex.Body) {
			t.Errorf("%d: response payload differs (%d vs %d bytes)", i, len(body), len(ex.Body))
		}
		if want := append(bytes.TrimRight(ex.ResponseHead, "\r\n"), "\r\n\r\n"...); !bytes.Equal(head, want) {
			t.Errorf("%d: response head %q, want %q", i, head, want)
		}
		_, reqBody, _ := HTTPPayload(req.Block)
		if !bytes.Equal(reqBody, ex.RequestBody) {
			t.Errorf("%d: request payload %q, want %q", i, reqBody, ex.RequestBody)
		}
		if refs[i].RequestID != req.Header.Get("WARC-Record-ID") || refs[i].ResponseID != resp.Header.Get("WARC-Record-ID") ||
			refs[i].File != files[0].name || refs[i].Offset != req.Offset {
			t.Errorf("%d: ref %+v does not match records at %d/%d", i, refs[i], req.Offset, resp.Offset)
		}
		// The ref locates the pair on its own: read from its offset.
		f, err := os.Open(filepath.Join(dir, refs[i].File))
		if err != nil {
			t.Fatal(err)
		}
		r := NewWARCReader(io.NewSectionReader(f, refs[i].Offset, refs[i].Length))
		got1, err1 := r.Next()
		got2, err2 := r.Next()
		if len(ex.Metadata) > 0 {
			meta, err := r.Next()
			if err != nil || refs[i].MetadataID == "" || meta.Header.Get("WARC-Record-ID") != refs[i].MetadataID || !bytes.Equal(meta.Block, ex.Metadata) {
				t.Errorf("%d: metadata record of the ref: %v, %v", i, meta, err)
			}
		} else if refs[i].MetadataID != "" {
			t.Errorf("%d: MetadataID %q without metadata", i, refs[i].MetadataID)
		}
		_, err3 := r.Next()
		f.Close()
		if err1 != nil || err2 != nil || err3 != io.EOF ||
			got1.Header.Get("WARC-Record-ID") != refs[i].RequestID || got2.Header.Get("WARC-Record-ID") != refs[i].ResponseID {
			t.Errorf("%d: reading the ref's byte range: %v, %v, %v", i, err1, err2, err3)
		}
	}
}

func TestWARCRotation(t *testing.T) {
	dir := t.TempDir()
	const max = 16 << 10
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "test", MaxFileSize: max})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	var want []string
	for i := range 40 {
		body := make([]byte, 1000+rng.IntN(3000)) // random: gzip cannot shrink it
		for j := range body {
			body[j] = byte(rng.UintN(256))
		}
		if i == 20 {
			body = make([]byte, 3*max) // one pair larger than a whole file
			for j := range body {
				body[j] = byte(rng.UintN(256))
			}
		}
		u := fmt.Sprintf("http://r.example/%d", i)
		want = append(want, u)
		if _, err := w.Write(&Exchange{TargetURI: u, RequestHead: []byte("GET / HTTP/1.1\r\n"), ResponseHead: ResponseHead("", 200, nil, len(body)), Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := readWARCDir(t, dir)
	if len(files) < 5 {
		t.Fatalf("%d files for ~%d KiB with a %d KiB limit", len(files), 40*2500/1024, max>>10)
	}
	var got []string
	prevSerial := ""
	for _, wf := range files {
		m := fileNameRE.FindStringSubmatch(wf.name)
		if m == nil || m[1] <= prevSerial {
			t.Errorf("file %q out of sequence after serial %q", wf.name, prevSerial)
		} else {
			prevSerial = m[1]
		}
		pairs := checkWARCFile(t, wf)
		fi, err := os.Stat(filepath.Join(dir, wf.name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > max && len(pairs) != 1 {
			t.Errorf("%s: %d bytes > %d with %d pairs", wf.name, fi.Size(), max, len(pairs))
		}
		if len(pairs) == 0 {
			t.Errorf("%s: only warcinfo", wf.name)
		}
		for _, p := range pairs {
			got = append(got, p[1].Header.Get("WARC-Target-URI"))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("URIs across files:\n got %v\nwant %v", got, want)
	}

	// A new writer in the same directory continues the serials.
	w2, err := NewWARCWriter(dir, WARCOptions{Prefix: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := w2.Write(testExchanges(3)[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if m := fileNameRE.FindStringSubmatch(ref.File); m == nil || m[1] <= prevSerial {
		t.Errorf("resumed writer's file %q does not follow serial %s", ref.File, prevSerial)
	}
}

func TestWARCConcurrent(t *testing.T) {
	dir := t.TempDir()
	// Small files so that rotation happens while writers race.
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "test", MaxFileSize: 32 << 10, GzipLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 12
	// Syncs run beside the writes and rotations all along: their fsync
	// is outside the writer's lock, and a rotated file waits for it.
	stopSync := make(chan struct{})
	syncDone := make(chan struct{})
	go func() {
		defer close(syncDone)
		for {
			select {
			case <-stopSync:
				return
			default:
			}
			if err := w.Sync(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, ex := range testExchanges(uint64(g)) {
				for j := range each / 4 {
					e := *ex
					e.TargetURI = fmt.Sprintf("http://c.example/%d/%d/%d", g, i, j)
					if _, err := w.Write(&e); err != nil {
						t.Error(err)
						return
					}
				}
			}
			if err := w.Sync(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(stopSync)
	<-syncDone
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, wf := range readWARCDir(t, dir) {
		for _, p := range checkWARCFile(t, wf) {
			u := p[0].Header.Get("WARC-Target-URI")
			if seen[u] || p[1].Header.Get("WARC-Target-URI") != u {
				t.Errorf("pair for %q repeated or mixed", u)
			}
			seen[u] = true
		}
	}
	if len(seen) != workers*4*(each/4) {
		t.Errorf("%d exchanges read, want %d", len(seen), workers*4*(each/4))
	}
}

// TestWARCTruncated cuts a file at every offset of a sample and checks that
// the reader returns exactly the records whose members lie wholly before the
// cut, then io.EOF (cut at a boundary) or ErrTruncated.
func TestWARCTruncated(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range testExchanges(4) {
		if _, err := w.Write(ex); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := readWARCDir(t, dir)
	data, err := os.ReadFile(filepath.Join(dir, files[0].name))
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64 // end offset of each record's member
	for i, rec := range files[0].records {
		if i > 0 {
			ends = append(ends, rec.Offset)
		}
	}
	ends = append(ends, int64(len(data)))
	for cut := 0; cut <= len(data); cut += 1 + cut/50 {
		r := NewWARCReader(bytes.NewReader(data[:cut]))
		n := 0
		var err error
		for {
			if _, err = r.Next(); err != nil {
				break
			}
			n++
		}
		want := 0
		atBoundary := cut == 0
		for _, e := range ends {
			if e <= int64(cut) {
				want++
			}
			if e == int64(cut) {
				atBoundary = true
			}
		}
		if n != want {
			t.Errorf("cut %d: %d records, want %d", cut, n, want)
		}
		if atBoundary && err != io.EOF {
			t.Errorf("cut %d at a member boundary: %v, want io.EOF", cut, err)
		}
		if !atBoundary && !errors.Is(err, ErrTruncated) {
			t.Errorf("cut %d inside a member: %v, want ErrTruncated", cut, err)
		}
	}
}

func TestWARCReaderRejects(t *testing.T) {
	rec := func(s string) string { return s }
	cases := []struct {
		name string
		in   string
		want error
	}{
		{"not WARC", "HTTP/1.1 200 OK\r\n\r\n", ErrCorrupt},
		{"bad field", rec("WARC/1.1\r\nno colon here\r\n\r\n"), ErrCorrupt},
		{"no length", rec("WARC/1.1\r\nWARC-Type: resource\r\n\r\n\r\n\r\n"), ErrCorrupt},
		{"negative length", rec("WARC/1.1\r\nContent-Length: -1\r\n\r\n\r\n\r\n"), ErrCorrupt},
		{"bad terminator", rec("WARC/1.1\r\nContent-Length: 2\r\n\r\nab\r\nXX"), ErrCorrupt},
		{"short block", rec("WARC/1.1\r\nContent-Length: 20\r\n\r\nab"), ErrTruncated},
		{"cut header", rec("WARC/1.1\r\nContent-Len"), ErrTruncated},
		{"gzip garbage", "\x1f\x8bgarbage and more", ErrCorrupt},
		{"continuation first", rec("WARC/1.1\r\n  folded\r\n\r\n"), ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewWARCReader(strings.NewReader(c.in))
			_, err := r.Next()
			if !errors.Is(err, c.want) {
				t.Errorf("Next() = %v, want %v", err, c.want)
			}
			if _, again := r.Next(); again != err {
				t.Errorf("second Next() = %v, want the same error", again)
			}
		})
	}

	// A plain (uncompressed) file with two records and folded fields.
	plain := "WARC/1.0\r\nWARC-Type: resource\r\nX-Folded: a\r\n  b\r\nContent-Length: 2\r\n\r\nab\r\n\r\n" +
		"WARC/1.1\r\nWARC-Type: metadata\r\nContent-Length: 0\r\n\r\n\r\n\r\n"
	r := NewWARCReader(strings.NewReader(plain))
	a, err := r.Next()
	if err != nil || a.Header.Get("x-folded") != "a b" || string(a.Block) != "ab" || a.Offset != 0 {
		t.Fatalf("plain record 1: %+v, %v", a, err)
	}
	b, err := r.Next()
	if err != nil || b.Header.Get("WARC-Type") != "metadata" || b.Offset != int64(strings.Index(plain, "WARC/1.1")) {
		t.Fatalf("plain record 2: %+v, %v", b, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after plain records: %v", err)
	}
	torn := plain + "WARC/1.1\r\nContent-Length: 10\r\n\r\nabc"
	r = NewWARCReader(strings.NewReader(torn))
	var err3 error
	for range 3 {
		_, err3 = r.Next()
	}
	if want := fmt.Sprintf("offset %d", len(plain)); !errors.Is(err3, ErrTruncated) || !strings.Contains(err3.Error(), want) {
		t.Errorf("torn plain record: %v, want ErrTruncated naming %s", err3, want)
	}
}

func TestExchangeValidate(t *testing.T) {
	ok := Exchange{TargetURI: "http://x/", RequestHead: []byte("GET / HTTP/1.1\r\n"), ResponseHead: []byte("HTTP/1.1 200 OK\r\n")}
	cases := []struct {
		name  string
		edit  func(*Exchange)
		valid bool
	}{
		{"ok", func(*Exchange) {}, true},
		{"no URI", func(e *Exchange) { e.TargetURI = "" }, false},
		{"URI with CRLF", func(e *Exchange) { e.TargetURI = "http://x/\r\nWARC-Type: evil" }, false},
		{"URI with space", func(e *Exchange) { e.TargetURI = "http://x/a b" }, false},
		{"IP with newline", func(e *Exchange) { e.IP = "1.2.3.4\n" }, false},
		{"no request head", func(e *Exchange) { e.RequestHead = nil }, false},
		{"blank response head", func(e *Exchange) { e.ResponseHead = []byte("\r\n") }, false},
		{"truncated reason", func(e *Exchange) { e.Truncated = "time" }, true},
		{"unknown truncated reason", func(e *Exchange) { e.Truncated = "because" }, false},
	}
	w, err := NewWARCWriter(t.TempDir(), WARCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, c := range cases {
		ex := ok
		c.edit(&ex)
		_, err := w.Write(&ex)
		if got := err == nil; got != c.valid {
			t.Errorf("%s: Write = %v, want valid=%v", c.name, err, c.valid)
		}
		if err != nil && !errors.Is(err, ErrInvalidExchange) {
			t.Errorf("%s: error %v does not match ErrInvalidExchange", c.name, err)
		}
	}
}

func TestHTTPHeads(t *testing.T) {
	u, _ := url.Parse("http://h.example:8080/a%20b/c?x=1&y=2#frag")
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"request", RequestHead("GET", u, "", http.Header{"User-Agent": {"ua"}, "Accept": {"a", "b"}, "Host": {"ignored"}}),
			"GET /a%20b/c?x=1&y=2 HTTP/1.1\r\nHost: h.example:8080\r\nAccept: a\r\nAccept: b\r\nUser-Agent: ua\r\n\r\n"},
		{"decoded response", ResponseHead("HTTP/2.0", 200, http.Header{"Content-Encoding": {"gzip"}, "Content-Length": {"10"}, "Transfer-Encoding": {"chunked"}, "Content-Type": {"text/html"}}, 42),
			"HTTP/2.0 200 OK\r\nContent-Length: 42\r\nContent-Type: text/html\r\nX-Layercrawl-Orig-Content-Encoding: gzip\r\nX-Layercrawl-Orig-Content-Length: 10\r\nX-Layercrawl-Orig-Transfer-Encoding: chunked\r\n\r\n"},
		{"same length kept", ResponseHead("", 404, http.Header{"Content-Length": {"5"}}, 5),
			"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\n"},
		{"unknown status, hostile value", ResponseHead("", 599, http.Header{"X-Evil": {"a\r\nWARC/1.1"}}, 0),
			"HTTP/1.1 599 status code 599\r\nContent-Length: 0\r\nX-Evil: a  WARC/1.1\r\n\r\n"},
	}
	for _, c := range cases {
		if string(c.got) != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, c.got, c.want)
		}
	}
}

func TestWARCOptionsValidate(t *testing.T) {
	cases := []struct {
		o     WARCOptions
		valid bool
	}{
		{WARCOptions{}, true},
		{WARCOptions{Prefix: "crawl", MaxFileSize: 1 << 20, GzipLevel: 9, Info: map[string]string{"operator": "me"}}, true},
		{WARCOptions{Prefix: "../x"}, false},
		{WARCOptions{Prefix: ".hidden"}, false},
		{WARCOptions{MaxFileSize: -1}, false},
		{WARCOptions{GzipLevel: 10}, false},
		{WARCOptions{Info: map[string]string{"bad name": "x"}}, false},
		{WARCOptions{Info: map[string]string{"ok": "line\nbreak"}}, false},
	}
	for _, c := range cases {
		if err := c.o.Validate(); (err == nil) != c.valid {
			t.Errorf("%+v.Validate() = %v, want valid=%v", c.o, err, c.valid)
		}
	}
}

func FuzzWARCReader(f *testing.F) {
	dir := f.TempDir()
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	for _, ex := range testExchanges(5)[:2] {
		if _, err := w.Write(ex); err != nil {
			f.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte("WARC/1.1\r\nContent-Length: 2\r\n\r\nab\r\n\r\n"))
	f.Add([]byte("WARC/1.0\r\nA: b\r\n c\r\nContent-Length: 0\r\n\r\n\r\n\r\nWARC/1.1\r\n"))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"))
	f.Add([]byte("WARC/1.1\r\nContent-Length: 99999999999\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewWARCReader(bytes.NewReader(data))
		prev := int64(-1)
		for range 1000 {
			rec, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
					t.Fatalf("error %v is neither ErrCorrupt nor ErrTruncated", err)
				}
				return
			}
			if fmt.Sprint(len(rec.Block)) != strings.TrimLeft(rec.Header.Get("Content-Length"), "+0") && len(rec.Block) != 0 {
				t.Fatalf("block of %d bytes, Content-Length %q", len(rec.Block), rec.Header.Get("Content-Length"))
			}
			if rec.Offset < prev || rec.Offset > int64(len(data)) {
				t.Fatalf("offset %d after %d (input %d bytes)", rec.Offset, prev, len(data))
			}
			prev = rec.Offset
			// Length bounds the record: its bytes alone read as it.
			if rec.Length < 0 || rec.Offset+rec.Length > int64(len(data)) {
				t.Fatalf("record at %d of length %d (input %d bytes)", rec.Offset, rec.Length, len(data))
			}
			if rec.Length > 0 {
				alone, err := NewWARCReader(bytes.NewReader(data[rec.Offset : rec.Offset+rec.Length])).Next()
				if err != nil || !bytes.Equal(alone.Block, rec.Block) || len(alone.Header) != len(rec.Header) {
					t.Fatalf("record at %d, length %d, read alone: %v", rec.Offset, rec.Length, err)
				}
			}
		}
	})
}

// TestWARCReaderLongHeader reads a header of many continuation lines (which
// once took time quadratic in their number) and rejects one over the limit.
func TestWARCReaderLongHeader(t *testing.T) {
	build := func(lines int) []byte {
		var b bytes.Buffer
		b.WriteString("WARC/1.1\r\nX-Long: a\r\n")
		for range lines {
			b.WriteString(" b\r\n")
		}
		b.WriteString("Content-Length: 2\r\n\r\nok\r\n\r\n")
		return b.Bytes()
	}
	const lines = 200_000 // 800 KB of header, under the 1 MiB limit
	rec, err := NewWARCReader(bytes.NewReader(build(lines))).Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Header.Get("X-Long"); len(got) != 1+2*lines || !strings.HasSuffix(got, " b b") {
		t.Errorf("X-Long value of %d bytes (%.20q...), want %d", len(got), got, 1+2*lines)
	}
	if string(rec.Block) != "ok" {
		t.Errorf("block %q", rec.Block)
	}
	_, err = NewWARCReader(bytes.NewReader(build(maxWARCHeader / 4))).Next()
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("header over %d bytes: err %v, want ErrCorrupt", maxWARCHeader, err)
	}
}

func TestAppendWARCField(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"outlink", "http://a.test/x L a/@href", "outlink: http://a.test/x L a/@href\r\n"},
		{"via", "http://a.test/\r\nWARC-Type: response", "via: http://a.test/%0D%0AWARC-Type: response\r\n"},
		{"x", "tab\there\x7f", "x: tab%09here%7F\r\n"},
		{"empty", "", "empty: \r\n"},
	}
	for _, tc := range tests {
		if got := string(AppendWARCField([]byte("a"), tc.name, tc.value)); got != "a"+tc.want {
			t.Errorf("AppendWARCField(%q, %q) = %q, want %q", tc.name, tc.value, got, "a"+tc.want)
		}
	}
}

// TestWARCGivenPayloadDigest: a PayloadDigest given with the exchange is
// written as it is (the writer does not hash the body again), and the
// digest the crawler gives, PayloadDigest(Body), verifies.
func TestWARCGivenPayloadDigest(t *testing.T) {
	for _, tc := range []struct{ name, digest, want string }{
		{"computed", "", PayloadDigest(testExchanges(1)[0].Body)},
		{"given", PayloadDigest(testExchanges(1)[0].Body), PayloadDigest(testExchanges(1)[0].Body)},
		{"trusted", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
	} {
		dir := t.TempDir()
		w, err := NewWARCWriter(dir, WARCOptions{Prefix: "digest"})
		if err != nil {
			t.Fatal(err)
		}
		ex := testExchanges(1)[0]
		ex.PayloadDigest = tc.digest
		if _, err := w.Write(ex); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		files := readWARCDir(t, dir)
		var got string
		for _, rec := range files[0].records {
			if rec.Header.Get("WARC-Type") == "response" {
				got = rec.Header.Get("WARC-Payload-Digest")
			}
		}
		if got != tc.want {
			t.Errorf("%s: WARC-Payload-Digest %q, want %q", tc.name, got, tc.want)
		}
	}
}
