package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"maps"
	"math/rand/v2"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/internal/nginxtest"
	"github.com/layercrawl/layercrawl/internal/warciotest"
	"github.com/layercrawl/layercrawl/storage"
)

// nginxSite writes a small static site into root and returns its files by
// URL path: HTML pages linking each other, a stylesheet, a script, a PNG, a
// binary nginx does not gzip, robots.txt, and a page of about 300 kB whose
// gzip'd body spans many chunks.
func nginxSite(t *testing.T, root string) map[string][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(31, 1))
	words := strings.Fields("crawler archive record payload digest chunk gzip header nginx response request frontier bloom filter layer host politeness")
	var big strings.Builder
	big.WriteString("<!doctype html>\n<html><head><title>big</title></head><body>\n<p><a href=\"index.html\">home</a></p>\n")
	for big.Len() < 300_000 {
		big.WriteString("<p>")
		for range 12 {
			fmt.Fprintf(&big, "%s%d ", words[rng.IntN(len(words))], rng.IntN(1000))
		}
		big.WriteString("</p>\n")
	}
	big.WriteString("</body></html>\n")
	img := image.NewNRGBA(image.Rect(0, 0, 24, 24))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.IntN(256))
	}
	img.Set(0, 0, color.NRGBA{1, 2, 3, 255})
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, img); err != nil {
		t.Fatal(err)
	}
	bin := make([]byte, 5000)
	for i := range bin {
		bin[i] = byte(rng.IntN(256))
	}
	page := func(title, body string) []byte {
		return []byte("<!doctype html>\n<html><head><title>" + title + "</title>\n" +
			"<link rel=\"stylesheet\" href=\"/style.css\">\n<script src=\"/app.js\"></script></head>\n<body>\n" + body + "\n</body></html>\n")
	}
	files := map[string][]byte{
		"/index.html": page("home", `<h1>home</h1><img src="/logo.png" alt="logo">
<ul><li><a href="a.html">a</a></li><li><a href="/b.html">b</a></li><li><a href="big.html">big</a></li><li><a href="/data.bin">data</a></li></ul>`),
		"/a.html":     page("a", `<p>Page a. <a href="b.html">b</a>, <a href="index.html">home</a>.</p>`),
		"/b.html":     page("b", `<p>Page b. <a href="a.html">a</a>, <a href="big.html">big</a>.</p>`),
		"/big.html":   []byte(big.String()),
		"/style.css":  []byte(strings.Repeat("body { font-family: serif; color: #222; }\nh1 { margin: 0 0 1em; }\n", 20)),
		"/app.js":     []byte("document.addEventListener('DOMContentLoaded', () => { document.title += ' (js)'; });\n"),
		"/logo.png":   pngBuf.Bytes(),
		"/data.bin":   bin,
		"/robots.txt": []byte("User-agent: *\nDisallow: /private/\n"),
	}
	for p, b := range files {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestCrawlNginxWARCFidelity crawls a static site served by a real nginx
// (gzip on, keep-alive, ETag; over HTTP and HTTPS) and checks every record
// of the WARC files:
//
//   - warcio.js, an independent reader, reads every record, and the block
//     digest it computes is WARC-Block-Digest;
//   - WARC-Payload-Digest is the SHA-1 of the entity with the transfer
//     coding removed and the content coding kept;
//   - a response record holds nginx's bytes: the field names in nginx's
//     spelling (ETag), Content-Encoding and Transfer-Encoding where nginx
//     sent them, nginx's field order, a body that de-chunked and gunzipped
//     is the file on disk, and, sent once more on a new connection, the
//     record's request gets a response equal to the record but for Date;
//   - a request record is a request line for the URL's path, then the
//     crawler's fields, and nginx logged that request line.
func TestCrawlNginxWARCFidelity(t *testing.T) {
	root := t.TempDir()
	files := nginxSite(t, root)
	srv := nginxtest.Start(t, nginxtest.Options{Root: root, TLS: true})
	warciotest.Prefix(t) // skip or fail before crawling when warcio.js is missing

	// The crawl runs in a child process, so that SSL_CERT_FILE (the
	// certificate of nginx's HTTPS listener) is the child's trust root;
	// crypto/x509 reads it once per process.
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	seeds := writeSeeds(t, dir, []string{srv.URL + "/index.html", srv.TLSURL + "/index.html"})
	args := []string{"--seeds", seeds, "--out", out, "--delay", "-1", "--allow-private", "--concurrency", "4"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrawlChild$")
	cmd.Env = append(os.Environ(), "LAYERCRAWL_CRAWL_CHILD="+strings.Join(args, "\x1f"), "SSL_CERT_FILE="+srv.CertFile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("crawl: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-waited
		t.Fatalf("crawl did not finish in 60s\nstderr:\n%s", stderr.String())
	}
	entries := readLog(t, filepath.Join(out, "crawl.log.jsonl"))
	for _, e := range entries {
		if e.Status != 200 || e.Error != "" {
			t.Errorf("crawl log: %s status %d error %q", e.URL, e.Status, e.Error)
		}
	}
	st := checkNginxWARC(t, srv, files, filepath.Join(out, "warc"))
	t.Logf("%d log lines; %+v; warcio.js %s", len(entries), st, warciotest.Version)
}

// nginxWARCStats counts what checkNginxWARC read.
type nginxWARCStats struct {
	records, files int
	chunked        int // response records with Transfer-Encoding: chunked
	gzipped        int // response records with Content-Encoding: gzip
	identity       int // response records with neither
	revisits       int
	maxChunks      int // most chunks in one response record's body
}

// checkNginxWARC checks every record of the WARC files in dir, which
// archive fetches of files (by URL path) from srv's origins, as
// TestCrawlNginxWARCFidelity says, and counts them.
func checkNginxWARC(t *testing.T, srv *nginxtest.Server, files map[string][]byte, dir string) nginxWARCStats {
	script := filepath.Join("..", "..", "storage", "testdata", "warcio_check.mjs")
	paths, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no WARC files in %s (%v)", dir, err)
	}
	slices.Sort(paths)
	type record struct {
		*storage.WARCRecord
		file string
	}
	var recs []record
	for _, p := range paths {
		if err := storage.ReadWARCFile(p, func(rec *storage.WARCRecord) error {
			recs = append(recs, record{rec, filepath.Base(p)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	js := warciotest.Read(t, script, paths...)
	if len(js) != len(recs) {
		t.Fatalf("warcio.js read %d records, Go %d", len(js), len(recs))
	}

	requests := map[string][]byte{}      // target URI -> request block
	payloadDigest := map[string]string{} // response record ID -> WARC-Payload-Digest
	for _, r := range recs {
		switch r.Header.Get("WARC-Type") {
		case "request":
			requests[r.Header.Get("WARC-Target-URI")] = r.Block
		case "response":
			payloadDigest[r.Header.Get("WARC-Record-ID")] = r.Header.Get("WARC-Payload-Digest")
		}
	}
	accessLog := srv.AccessLog(t)
	archived := map[string]bool{}
	var st nginxWARCStats
	for i, r := range recs {
		j := js[i]
		typ, uri := r.Header.Get("WARC-Type"), r.Header.Get("WARC-Target-URI")
		where := fmt.Sprintf("%s record at %s:%d (%s)", typ, r.file, r.Offset, uri)
		if j.File != r.file || j.Offset != r.Offset || j.Type != typ {
			t.Errorf("%s: warcio.js read a %s record at %s:%d", where, j.Type, j.File, j.Offset)
			continue
		}
		if want := r.Header.Get("WARC-Block-Digest"); j.BlockSHA1 != want || j.BlockLen != len(r.Block) {
			t.Errorf("%s: warcio.js block digest %s (%d bytes), WARC-Block-Digest %s (%d bytes)", where, j.BlockSHA1, j.BlockLen, want, len(r.Block))
		}
		u, err := url.Parse(uri)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		switch typ {
		case "request":
			for _, p := range requestProblems(r.Block, u) {
				t.Errorf("%s: %s", where, p)
			}
			line, _, _ := strings.Cut(string(r.Block), "\r\n")
			if !slices.ContainsFunc(accessLog, func(l string) bool { return strings.HasPrefix(l, line+" ") }) {
				t.Errorf("%s: nginx's access log has no request %q", where, line)
			}
		case "revisit":
			// The same payload as an earlier response (the site is served
			// on both origins): the block is the response's head as
			// received, the payload digest the original's.
			archived[uri] = true
			st.revisits++
			if got, want := r.Header.Get("WARC-Payload-Digest"), payloadDigest[r.Header.Get("WARC-Refers-To")]; got != want {
				t.Errorf("%s: WARC-Payload-Digest %s, the response it refers to (%s) has %q", where, got, r.Header.Get("WARC-Refers-To"), want)
			}
			fresh := resend(t, srv, where, u, requests[uri])
			if fresh == nil {
				continue
			}
			if i := bytes.Index(fresh, []byte("\r\n\r\n")); i >= 0 {
				fresh = fresh[:i+4]
			}
			for _, p := range wireProblems(r.Block, fresh) {
				t.Errorf("%s: %s", where, p)
			}
		case "response":
			archived[uri] = true
			// The payload digest: warcio.js hashes a chunked body with its
			// chunk framing when it writes, while WARC 1.1's payload (and
			// gowarc's) has the transfer coding removed; so a chunked
			// body is de-chunked here with net/http/httputil and hashed,
			// and any other is checked against warcio.js's digest of the
			// bytes after the head.
			want := r.Header.Get("WARC-Payload-Digest")
			head, body, _ := bytes.Cut(r.Block, []byte("\r\n\r\n"))
			h := parseHead(head)
			isChunked, isGzip := fieldHas(h.fields, "Transfer-Encoding", "chunked"), fieldHas(h.fields, "Content-Encoding", "gzip")
			switch {
			case isChunked && isGzip:
				st.chunked++
				st.gzipped++
			case isChunked:
				st.chunked++
			case isGzip:
				st.gzipped++
			default:
				st.identity++
			}
			if isChunked {
				st.maxChunks = max(st.maxChunks, countChunks(body))
				entity, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(body)))
				if got := sha1Base32(entity); err != nil || got != want {
					t.Errorf("%s: de-chunked payload digest %s (%v), WARC-Payload-Digest %s", where, got, err, want)
				}
				// A second opinion: the checker script de-chunks with
				// warcio.js's own reader.
				if j.EntitySHA1 != want {
					t.Errorf("%s: warcio.js de-chunked payload digest %s, WARC-Payload-Digest %s", where, j.EntitySHA1, want)
				}
			} else if j.PayloadSHA1 != want {
				t.Errorf("%s: warcio.js payload digest %s, WARC-Payload-Digest %s", where, j.PayloadSHA1, want)
			}
			if file, ok := files[u.Path]; ok {
				for _, p := range bodyProblems(r.Block, file) {
					t.Errorf("%s: %s", where, p)
				}
			} else {
				t.Errorf("%s: not a file of the site", where)
			}
			fresh := resend(t, srv, where, u, requests[uri])
			if fresh == nil {
				continue
			}
			for _, p := range wireProblems(r.Block, fresh) {
				t.Errorf("%s: %s", where, p)
			}
		}
	}
	for _, origin := range []string{srv.URL, srv.TLSURL} {
		for p := range files {
			if !archived[origin+p] {
				t.Errorf("no response record of %s", origin+p)
			}
		}
	}
	st.records, st.files = len(recs), len(paths)
	return st
}

// TestNginxWARCFromWire is the control of TestCrawlNginxWARCFidelity's
// checks: records of nginx's responses as read from the connection, written
// by storage.WARCWriter (a response and a revisit of each file), pass them
// all. It does not crawl, so it does not depend on how the crawler
// captures.
func TestNginxWARCFromWire(t *testing.T) {
	root := t.TempDir()
	files := nginxSite(t, root)
	srv := nginxtest.Start(t, nginxtest.Options{Root: root, TLS: true})
	warciotest.Prefix(t)
	dir := t.TempDir()
	w, err := storage.NewWARCWriter(dir, storage.WARCOptions{Prefix: "wire"})
	if err != nil {
		t.Fatal(err)
	}
	paths := slices.Sorted(maps.Keys(files))
	refs := map[string]string{} // URL path -> response record ID on the first origin
	for _, origin := range []string{srv.URL, srv.TLSURL} {
		u, err := url.Parse(origin)
		if err != nil {
			t.Fatal(err)
		}
		roots := srv.CertPool()
		if u.Scheme == "http" {
			roots = nil
		}
		for _, p := range paths {
			req := []byte("GET " + p + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: " + fetch.DefaultUserAgent + "\r\nAccept: */*\r\nAccept-Encoding: gzip\r\n\r\n")
			raw, err := nginxtest.Exchange(u.Host, roots, req)
			if err != nil {
				t.Fatal(err)
			}
			ex := &storage.Exchange{TargetURI: origin + p, Date: time.Now(), RequestHead: req, Response: raw, IP: "127.0.0.1"}
			if origin == srv.URL {
				ref, err := w.Write(ex)
				if err != nil {
					t.Fatal(err)
				}
				refs[p] = ref.ResponseID
				continue
			}
			// The same payload on the second origin: a revisit of the first's.
			resp, err := storage.ParseResponse(raw)
			if err != nil {
				t.Fatal(err)
			}
			ex.PayloadDigest = resp.PayloadDigest
			if _, err := w.WriteRevisit(ex, storage.Revisit{TargetURI: srv.URL + p, Date: time.Now(), RecordID: refs[p]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Of the 9 files, 7 are of types nginx gzips (which it then sends
	// chunked) and 2 are not (sent with Content-Length); each file is a
	// response on the first origin and a revisit on the second.
	st := checkNginxWARC(t, srv, files, dir)
	if st.chunked != 7 || st.gzipped != 7 || st.identity != 2 || st.revisits != 9 {
		t.Errorf("responses: %d chunked, %d gzip'd, %d neither, %d revisits; want 7, 7, 2, 9", st.chunked, st.gzipped, st.identity, st.revisits)
	}
	// big.html's gzip'd body spans several of nginx's output buffers.
	if st.maxChunks < 3 {
		t.Errorf("at most %d chunks in a response, want big.html in several", st.maxChunks)
	}
	t.Logf("%+v", st)
}

// resend sends req, the request record's block of u, to nginx once more
// on a new connection and returns nginx's response as read, or nil after
// reporting why not.
func resend(t *testing.T, srv *nginxtest.Server, where string, u *url.URL, req []byte) []byte {
	t.Helper()
	if req == nil {
		t.Errorf("%s: no request record", where)
		return nil
	}
	roots := srv.CertPool()
	if u.Scheme == "http" {
		roots = nil
	}
	fresh, err := nginxtest.Exchange(u.Host, roots, req)
	if err != nil {
		t.Errorf("%s: sending the record's request again: %v", where, err)
		return nil
	}
	return fresh
}

// countChunks counts the data chunks of a chunked body (up to the last
// chunk, or the first line that is not a chunk size).
func countChunks(body []byte) int {
	n := 0
	for {
		line, rest, ok := bytes.Cut(body, []byte("\r\n"))
		size, _, _ := strings.Cut(string(line), ";")
		v, err := strconv.ParseUint(size, 16, 63)
		if !ok || err != nil || v == 0 || uint64(len(rest)) < v+2 {
			return n
		}
		n++
		body = rest[v+2:]
	}
}

func sha1Base32(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

type headField struct{ name, value string }

type httpHead struct {
	start  string // the request or status line
	fields []headField
	bad    []string // lines that are not fields
}

// parseHead splits an HTTP head (without its blank line) into its start
// line and fields as written: names in their case, in their order,
// repeated fields kept.
func parseHead(head []byte) httpHead {
	lines := strings.Split(string(head), "\r\n")
	h := httpHead{start: lines[0]}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			h.bad = append(h.bad, l)
			continue
		}
		h.fields = append(h.fields, headField{name, strings.TrimSpace(value)})
	}
	return h
}

func (h httpHead) names() []string {
	n := make([]string, len(h.fields))
	for i, f := range h.fields {
		n[i] = f.name
	}
	return n
}

// fieldHas reports whether a field named name (in any case) has value
// (in any case) among its comma-separated elements.
func fieldHas(fields []headField, name, value string) bool {
	for _, f := range fields {
		if strings.EqualFold(f.name, name) {
			for v := range strings.SplitSeq(f.value, ",") {
				if strings.EqualFold(strings.TrimSpace(v), value) {
					return true
				}
			}
		}
	}
	return false
}

// timeVarying are the response fields that may differ between two fetches
// of an unchanged file from one nginx.
var timeVarying = map[string]bool{"Date": true}

// wireProblems compares a response record's block with fresh, the response
// nginx sent on a new connection for the record's request bytes, and says
// how the record differs from what nginx sends: spelling of field names,
// content and transfer coding, field order, field values other than Date,
// body bytes. Nothing means the record is nginx's bytes but for Date.
func wireProblems(record, fresh []byte) []string {
	var probs []string
	rHead, rBody, ok := bytes.Cut(record, []byte("\r\n\r\n"))
	if !ok {
		return []string{"the record's block has no end of HTTP head (CRLF CRLF)"}
	}
	fHead, fBody, _ := bytes.Cut(fresh, []byte("\r\n\r\n"))
	rh, fh := parseHead(rHead), parseHead(fHead)
	if rh.start != fh.start {
		probs = append(probs, fmt.Sprintf("status line %q, nginx sends %q", rh.start, fh.start))
	}
	if len(rh.bad) > 0 {
		probs = append(probs, fmt.Sprintf("head lines that are not fields: %q", rh.bad))
	}
	rNames := rh.names()
	for _, name := range fh.names() {
		if slices.Contains(rNames, name) {
			continue
		}
		if i := slices.IndexFunc(rNames, func(n string) bool { return strings.EqualFold(n, name) }); i >= 0 {
			probs = append(probs, fmt.Sprintf("field name %q, nginx spells it %q", rNames[i], name))
		} else if name != "Content-Encoding" && name != "Transfer-Encoding" {
			probs = append(probs, fmt.Sprintf("no field %s, which nginx sends", name))
		}
	}
	for _, name := range rNames {
		if !slices.ContainsFunc(fh.names(), func(n string) bool { return strings.EqualFold(n, name) }) {
			probs = append(probs, fmt.Sprintf("field %s, which nginx does not send", name))
		}
	}
	for _, c := range []headField{{"Content-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}} {
		if got, want := fieldHas(rh.fields, c.name, c.value), fieldHas(fh.fields, c.name, c.value); got != want {
			probs = append(probs, fmt.Sprintf("%s: %s %s in the record, %s in what nginx sends", c.name, c.value, present(got), present(want)))
		}
	}
	if !slices.Equal(rNames, fh.names()) {
		probs = append(probs, fmt.Sprintf("field order %q, nginx's is %q", rNames, fh.names()))
	}
	for _, f := range fh.fields {
		if timeVarying[f.name] {
			continue
		}
		i := slices.IndexFunc(rh.fields, func(r headField) bool { return strings.EqualFold(r.name, f.name) })
		if i >= 0 && rh.fields[i].value != f.value {
			probs = append(probs, fmt.Sprintf("%s: %q, nginx sends %q", f.name, rh.fields[i].value, f.value))
		}
	}
	if !bytes.Equal(rBody, fBody) {
		n := 0
		for n < min(len(rBody), len(fBody)) && rBody[n] == fBody[n] {
			n++
		}
		msg := fmt.Sprintf("body bytes differ from nginx's from byte %d: %d bytes in the record, nginx sends %d", n, len(rBody), len(fBody))
		if fieldHas(rh.fields, "Transfer-Encoding", "chunked") && fieldHas(fh.fields, "Transfer-Encoding", "chunked") {
			re, err1 := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(rBody)))
			fe, err2 := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(fBody)))
			if err1 == nil && err2 == nil && bytes.Equal(re, fe) {
				msg += " (the same entity, chunked differently)"
			}
		}
		probs = append(probs, msg)
	}
	return probs
}

func present(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}

// bodyProblems says how a 200 response record's body, with its transfer
// coding and content coding removed as its own head declares them, differs
// from file, the file on disk.
func bodyProblems(record, file []byte) []string {
	head, body, ok := bytes.Cut(record, []byte("\r\n\r\n"))
	if !ok {
		return []string{"the record's block has no end of HTTP head (CRLF CRLF)"}
	}
	h := parseHead(head)
	var r io.Reader = bytes.NewReader(body)
	if fieldHas(h.fields, "Transfer-Encoding", "chunked") {
		r = httputil.NewChunkedReader(r)
	}
	if fieldHas(h.fields, "Content-Encoding", "gzip") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return []string{fmt.Sprintf("Content-Encoding gzip, but the body is not gzip: %v", err)}
		}
		r = zr
	}
	got, err := io.ReadAll(r)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("decoding the body as its head declares: %v", err)}
	case !bytes.Equal(got, file):
		return []string{fmt.Sprintf("the body decodes to %d bytes (SHA-1 %s), not the file's %d (%s)", len(got), sha1Base32(got), len(file), sha1Base32(file))}
	}
	return nil
}

// requestProblems checks a request record's block: a GET request line for
// u's path in HTTP/1.1, then the crawler's fields (Host, User-Agent,
// Accept-Encoding gzip), then the blank line and nothing after it.
func requestProblems(block []byte, u *url.URL) []string {
	var probs []string
	head, rest, ok := bytes.Cut(block, []byte("\r\n\r\n"))
	if !ok {
		return []string{"no end of HTTP head (CRLF CRLF)"}
	}
	if len(rest) > 0 {
		probs = append(probs, fmt.Sprintf("%d bytes after the head of a GET", len(rest)))
	}
	h := parseHead(head)
	if want := "GET " + u.RequestURI() + " HTTP/1.1"; h.start != want {
		probs = append(probs, fmt.Sprintf("request line %q, want %q", h.start, want))
	}
	if len(h.bad) > 0 {
		probs = append(probs, fmt.Sprintf("head lines that are not fields: %q", h.bad))
	}
	want := map[string]string{"Host": u.Host, "User-Agent": fetch.DefaultUserAgent}
	for name, v := range want {
		if !slices.Contains(h.fields, headField{name, v}) {
			probs = append(probs, fmt.Sprintf("no field %s: %s", name, v))
		}
	}
	if !fieldHas(h.fields, "Accept-Encoding", "gzip") {
		probs = append(probs, "no Accept-Encoding with gzip")
	}
	return probs
}

// TestNginxRecordChecks checks the comparisons of TestCrawlNginxWARCFidelity
// on hand-made records: nginx's bytes with another Date pass; a head
// re-serialised the way net/http would write it, a re-chunked body, a
// changed field, a corrupt body and a wrong request each fail, naming the
// property.
func TestNginxRecordChecks(t *testing.T) {
	file := []byte(strings.Repeat("<p>nginx wrote this page</p>\n", 400))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(file)
	zw.Close()
	chunked := func(b []byte, size int) []byte {
		var out bytes.Buffer
		cw := httputil.NewChunkedWriter(&out)
		for len(b) > 0 {
			n := min(size, len(b))
			cw.Write(b[:n])
			b = b[n:]
		}
		cw.Close()
		out.WriteString("\r\n")
		return out.Bytes()
	}
	head := func(date, etag string) string {
		return "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: " + date + "\r\nContent-Type: text/html\r\n" +
			"Last-Modified: Sat, 28 Nov 2026 06:00:00 GMT\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n" +
			"Vary: Accept-Encoding\r\nETag: " + etag + "\r\nContent-Encoding: gzip\r\n\r\n"
	}
	nginx := append([]byte(head("Sat, 28 Nov 2026 07:00:00 GMT", `W/"6929477a-2d50"`)), chunked(gz.Bytes(), 4096)...)
	goHead := "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Type: text/html\r\nDate: Sat, 28 Nov 2026 07:00:00 GMT\r\n" +
		"Etag: W/\"6929477a-2d50\"\r\nLast-Modified: Sat, 28 Nov 2026 06:00:00 GMT\r\nServer: nginx/1.22.1\r\nVary: Accept-Encoding\r\n\r\n"
	fresh := append([]byte(head("Sat, 28 Nov 2026 07:00:09 GMT", `W/"6929477a-2d50"`)), chunked(gz.Bytes(), 4096)...)

	for _, c := range []struct {
		name        string
		record      []byte
		wire, body  []string // problems wanted, by what each says
		payloadOnly bool
	}{
		{name: "nginx's bytes, another Date", record: nginx},
		{name: "head only, as a revisit holds it", record: []byte(head("x", `W/"6929477a-2d50"`)), payloadOnly: true},
		{name: "re-serialised and decoded", record: append([]byte(goHead), file...),
			wire: []string{`field name "Etag", nginx spells it "ETag"`, "Content-Encoding: gzip absent in the record", "Transfer-Encoding: chunked absent in the record", "field order", "body bytes differ"}},
		{name: "re-chunked", record: append([]byte(head("x", `W/"6929477a-2d50"`)), chunked(gz.Bytes(), 40)...),
			wire: []string{"(the same entity, chunked differently)"}},
		{name: "another ETag", record: append([]byte(head("x", `"1"`)), chunked(gz.Bytes(), 4096)...),
			wire: []string{"ETag: "}},
		{name: "corrupt body", record: append([]byte(head("x", `W/"6929477a-2d50"`)), chunked(append(slices.Clone(gz.Bytes()[:100]), make([]byte, 50)...), 4096)...),
			wire: []string{"body bytes differ"}, body: []string{"decoding the body"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := fresh
			if c.payloadOnly {
				want, _, _ = bytes.Cut(fresh, []byte("\r\n\r\n"))
				want = append(want, "\r\n\r\n"...)
			}
			check := func(what string, got, want []string) {
				t.Helper()
				if len(got) != len(want) {
					t.Errorf("%s problems %q, want %d: %q", what, got, len(want), want)
					return
				}
				for i := range want {
					if !strings.Contains(got[i], want[i]) {
						t.Errorf("%s problem %d: %q, want it to say %q", what, i, got[i], want[i])
					}
				}
			}
			check("wire", wireProblems(c.record, want), c.wire)
			if !c.payloadOnly {
				check("body", bodyProblems(c.record, file), c.body)
			}
		})
	}

	u, _ := url.Parse("http://127.0.0.1:8080/a.html?q=1")
	good := "GET /a.html?q=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: " + fetch.DefaultUserAgent + "\r\nAccept-Encoding: gzip\r\n\r\n"
	if p := requestProblems([]byte(good), u); p != nil {
		t.Errorf("request as written: %q", p)
	}
	bad := "GET /a.html HTTP/1.0\r\nhost 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\n\r\nx"
	if p := requestProblems([]byte(bad), u); len(p) != 6 {
		t.Errorf("bad request: %d problems %q, want 6 (body, request line, bad line, Host, User-Agent, Accept-Encoding)", len(p), p)
	}
}
