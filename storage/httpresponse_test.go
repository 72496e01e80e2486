package storage

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// rawFixture is a response as a server wrote it, with what the archive must
// make of it, worked out by hand rather than by the parser under test.
type rawFixture struct {
	name    string
	raw     string
	payload string // the entity: transfer coding removed, content coding kept
	head    string // the bytes before the payload (a revisit record's block)
	cut     bool   // the response ends before its framing does
	bad     bool   // ParseResponse reports ErrMalformedResponse
	// warcio says why warcio.js's reading of the entity differs from
	// WARC-Payload-Digest; empty when it must match.
	warcio string
}

func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

func rawFixtures() []rawFixture {
	gz := gzipped(strings.Repeat("<p>gzip'd by the server, chunked on the wire</p>\n", 40))
	half := len(gz) / 2
	odd := "HTTP/1.1 200 OK\r\nsErVeR: nginx/1.22.1\r\nDate: Sat, 28 Nov 2026 06:00:00 GMT\r\nContent-Type: text/html\r\n" +
		"Set-Cookie: a=1; Path=/\r\nETag: \"6567-5e0\"\r\nSet-Cookie: b=2\r\ncontent-length: 12\r\nX-Empty:\r\n\r\n"
	chunkedHead := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"
	gzHead := "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\nContent-Encoding: gzip\r\n\r\n"
	early := "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
	cont := "HTTP/1.1 100 Continue\r\n\r\n"
	final := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
	return []rawFixture{
		{name: "odd case, order and repeated fields", raw: odd + "<p>hello</p>", payload: "<p>hello</p>", head: odd},
		{name: "chunk extensions", raw: chunkedHead + "5;name=value\r\nhello\r\n7;a=\"b; c\";d\r\n, world\r\n0;last\r\n\r\n",
			payload: "hello, world", head: chunkedHead},
		{name: "chunk extensions and trailers", raw: chunkedHead + "5;name=value\r\nhello\r\n7;a=\"b; c\";d\r\n, world\r\n0;last\r\nX-Checksum: 1234\r\nX-More: 5\r\n\r\n",
			payload: "hello, world", head: chunkedHead, warcio: "warcio.js's de-chunker keeps trailer fields as data"},
		{name: "gzip chunked", raw: gzHead + hexLen(gz[:half]) + "\r\n" + gz[:half] + "\r\n" + hexLen(gz[half:]) + "\r\n" + gz[half:] + "\r\n0\r\n\r\n",
			payload: gz, head: gzHead},
		{name: "cut mid-chunk", raw: chunkedHead + "5\r\nhello\r\n1a\r\nthe connection d", payload: "hellothe connection d", head: chunkedHead, cut: true},
		{name: "cut before the last chunk", raw: chunkedHead + "5\r\nhello\r\n", payload: "hello", head: chunkedHead, cut: true},
		{name: "HTTP/1.0 read until close", raw: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it\r\n\r\nto the end",
			payload: "all of it\r\n\r\nto the end", head: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"},
		{name: "HTTP/1.0 ignores Transfer-Encoding", raw: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			payload: "5\r\nhello\r\n0\r\n\r\n", head: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{name: "1xx before the answer", raw: early + final + "ok", payload: "ok", head: early + final},
		{name: "1xx without fields", raw: early + cont + final + "ok", payload: "ok", head: early + cont + final,
			warcio: "warcio.js reads an empty field section up to the next blank line, taking the next head for its fields"},
		{name: "bare LF", raw: "HTTP/1.1 200 OK\nContent-Length: 3\n\nabc", payload: "abc", head: "HTTP/1.1 200 OK\nContent-Length: 3\n\n",
			warcio: "warcio.js needs CRLF line ends"},
		{name: "short of Content-Length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd", payload: "abcd", head: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", cut: true},
		{name: "cut inside the head", raw: "HTTP/1.1 200 OK\r\nContent-Le", head: "HTTP/1.1 200 OK\r\nContent-Le", cut: true},
		{name: "304 has no body", raw: "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", head: "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"},
		{name: "conflicting Content-Length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
			payload: "abc", head: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", bad: true},
		{name: "not HTTP", raw: "SSH-2.0-OpenSSH_9.2\r\n\r\nbinary", payload: "binary", head: "SSH-2.0-OpenSSH_9.2\r\n\r\n", bad: true,
			warcio: "not HTTP"},
		{name: "bad chunk size", raw: chunkedHead + "5\r\nhello\r\nzz\r\nrest", payload: "hello", head: chunkedHead, bad: true,
			warcio: "warcio.js keeps the rest as data from a chunk it cannot read"},
	}
}

func hexLen(s string) string { return strings.ToUpper(strconv.FormatInt(int64(len(s)), 16)) }

// sha1Digest is a WARC digest computed without the package's helpers.
func sha1Digest(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

func TestParseResponseFixtures(t *testing.T) {
	for _, fx := range rawFixtures() {
		t.Run(fx.name, func(t *testing.T) {
			r, err := ParseResponse([]byte(fx.raw))
			if got := errors.Is(err, ErrMalformedResponse); got != fx.bad {
				t.Errorf("error %v, want malformed %v", err, fx.bad)
			}
			if r.Cut != fx.cut {
				t.Errorf("Cut %v, want %v", r.Cut, fx.cut)
			}
			if got := fx.raw[:r.BodyStart]; got != fx.head {
				t.Errorf("head %q, want %q", got, fx.head)
			}
			p, _, _ := ResponsePayload([]byte(fx.raw))
			if string(p) != fx.payload {
				t.Errorf("payload %q, want %q", p, fx.payload)
			}
			if want := sha1Digest([]byte(fx.payload)); r.PayloadDigest != want {
				t.Errorf("digest %s, want %s", r.PayloadDigest, want)
			}
			if r.PayloadLength != int64(len(fx.payload)) {
				t.Errorf("PayloadLength %d, want %d", r.PayloadLength, len(fx.payload))
			}
			// net/http agrees wherever it can read the response whole.
			if ref, ok := referenceResponse([]byte(fx.raw)); ok {
				if string(ref.payload) != fx.payload || ref.status != r.StatusCode {
					t.Errorf("net/http reads status %d payload %q", ref.status, ref.payload)
				}
			} else if !fx.cut && !fx.bad && !strings.Contains(fx.name, "HTTP/1.0 read") {
				t.Errorf("net/http cannot read the fixture")
			}
		})
	}
}

// TestWARCRawResponse writes every fixture as a response and as a revisit:
// the response block is the fixture byte for byte, the revisit block its
// head, the digests are SHA-1 of those bytes and of the payload, and a
// response cut short says so.
func TestWARCRawResponse(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	req := "GET /x HTTP/1.1\r\nHost: example.test\r\nUser-Agent: layercrawl\r\nAccept-Encoding: gzip\r\n\r\n"
	fxs := rawFixtures()
	for _, fx := range fxs {
		ex := &Exchange{TargetURI: "http://example.test/x", RequestHead: []byte(req), Response: []byte(fx.raw)}
		ref, err := w.Write(ex)
		if err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
		if _, err := w.WriteRevisit(ex, Revisit{TargetURI: "http://example.test/first", Date: time.Now(), RecordID: ref.ResponseID}); err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
	}
	// A capture's own reason wins over the writer's finding.
	var cut rawFixture
	for _, fx := range fxs {
		if fx.name == "cut mid-chunk" {
			cut = fx
		}
	}
	if _, err := w.Write(&Exchange{TargetURI: "http://example.test/t", RequestHead: []byte(req), Response: []byte(cut.raw), Truncated: "time"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := readWARCDir(t, dir)
	if len(files) != 1 {
		t.Fatalf("%d files", len(files))
	}
	recs := files[0].records[1:]
	if len(recs) != 4*len(fxs)+2 {
		t.Fatalf("%d records, want %d", len(recs), 4*len(fxs)+2)
	}
	checkWARCFile(t, files[0])
	for i, fx := range fxs {
		reqRec, resp, revReq, rev := recs[4*i], recs[4*i+1], recs[4*i+2], recs[4*i+3]
		for _, r := range []*WARCRecord{reqRec, revReq} {
			if string(r.Block) != req {
				t.Errorf("%s: request block %q", fx.name, r.Block)
			}
		}
		if string(resp.Block) != fx.raw {
			t.Errorf("%s: response block differs from the bytes received:\n%q\n%q", fx.name, resp.Block, fx.raw)
		}
		if got, want := resp.Header.Get("WARC-Block-Digest"), sha1Digest([]byte(fx.raw)); got != want {
			t.Errorf("%s: block digest %s, want %s", fx.name, got, want)
		}
		want := sha1Digest([]byte(fx.payload))
		if got := resp.Header.Get("WARC-Payload-Digest"); got != want {
			t.Errorf("%s: payload digest %s, want %s", fx.name, got, want)
		}
		wantTrunc := ""
		if fx.cut {
			wantTrunc = "unspecified"
		}
		if got := resp.Header.Get("WARC-Truncated"); got != wantTrunc {
			t.Errorf("%s: WARC-Truncated %q, want %q", fx.name, got, wantTrunc)
		}
		if string(rev.Block) != fx.head || rev.Header.Get("WARC-Payload-Digest") != want ||
			rev.Header.Get("WARC-Refers-To") != resp.Header.Get("WARC-Record-ID") {
			t.Errorf("%s: revisit block %q, digest %s, refers to %s", fx.name, rev.Block, rev.Header.Get("WARC-Payload-Digest"), rev.Header.Get("WARC-Refers-To"))
		}
	}
	if got := recs[len(recs)-1].Header.Get("WARC-Truncated"); got != "time" {
		t.Errorf("WARC-Truncated %q, want the capture's own \"time\"", got)
	}
}

// referenceParse is what net/http makes of a raw response: 1xx interim
// responses skipped as http.Transport skips them, the final body read to
// its end (net/http removes the chunked coding, keeps the content coding).
type referenceParse struct {
	payload  []byte
	status   int
	consumed int // bytes read: the end of the body
}

// referenceResponse is the slow reference for ParseResponse: net/http's
// ReadResponse and its chunked reader (httputil.NewChunkedReader). ok is
// false when net/http cannot read the response whole.
func referenceResponse(raw []byte) (referenceParse, bool) {
	src := bytes.NewReader(raw)
	br := bufio.NewReader(src)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return referenceParse{}, false
		}
		if resp.StatusCode >= 100 && resp.StatusCode <= 199 && resp.StatusCode != 101 {
			continue
		}
		payload, err := io.ReadAll(resp.Body)
		if err != nil {
			return referenceParse{}, false
		}
		return referenceParse{payload: payload, status: resp.StatusCode, consumed: len(raw) - src.Len() - br.Buffered()}, true
	}
}

// referenceChunked de-chunks b with httputil's reader; ok false when it
// cannot.
func referenceChunked(b []byte) ([]byte, bool) {
	p, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(b)))
	return p, err == nil
}

func FuzzParseResponse(f *testing.F) {
	for _, fx := range rawFixtures() {
		f.Add([]byte(fx.raw))
	}
	f.Add([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello"))
	f.Add([]byte("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n 4\r\n\r\nabcd"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\nffffffffffffffff\r\nx"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := ParseResponse(raw)
		if err != nil && !errors.Is(err, ErrMalformedResponse) {
			t.Fatalf("error %v does not match ErrMalformedResponse", err)
		}
		if !(0 <= r.HeadStart && r.HeadStart <= r.BodyStart && r.BodyStart <= r.BodyEnd && r.BodyEnd <= len(raw)) {
			t.Fatalf("offsets %d %d %d of %d bytes", r.HeadStart, r.BodyStart, r.BodyEnd, len(raw))
		}
		p, r2, err2 := ResponsePayload(raw)
		if r2.BodyEnd != r.BodyEnd || r2.Cut != r.Cut || (err2 == nil) != (err == nil) {
			t.Fatalf("ResponsePayload disagrees with ParseResponse: %+v %v, %+v %v", r2, err2, r, err)
		}
		if int64(len(p)) != r.PayloadLength || sha1Digest(p) != r.PayloadDigest {
			t.Fatalf("payload of %d bytes (digest %s), ParseResponse says %d (%s)", len(p), sha1Digest(p), r.PayloadLength, r.PayloadDigest)
		}
		if r.PayloadLength > int64(r.BodyEnd-r.BodyStart) {
			t.Fatalf("payload %d bytes longer than the body %d", r.PayloadLength, r.BodyEnd-r.BodyStart)
		}
		if !r.Chunked && !bytes.Equal(p, raw[r.BodyStart:r.BodyEnd]) {
			t.Fatalf("unchunked payload is not the body")
		}
		if r.Chunked && err == nil && !r.Cut {
			if ref, ok := referenceChunked(raw[r.BodyStart:r.BodyEnd]); ok && !bytes.Equal(ref, p) {
				t.Fatalf("httputil de-chunks %q, ParseResponse %q", ref, p)
			}
		}
		ref, ok := referenceResponse(raw)
		if !ok {
			return
		}
		if err != nil || r.Cut {
			t.Fatalf("net/http reads it whole; ParseResponse: cut %v, %v", r.Cut, err)
		}
		if !bytes.Equal(ref.payload, p) || ref.status != r.StatusCode || ref.consumed != r.BodyEnd {
			t.Fatalf("net/http: status %d payload %q ending at %d; ParseResponse: %d %q ending at %d",
				ref.status, ref.payload, ref.consumed, r.StatusCode, p, r.BodyEnd)
		}
	})
}

// FuzzWARCRawRecord: whatever bytes a server sent, the writer archives them
// byte for byte with digests that verify, as a response and as a revisit.
func FuzzWARCRawRecord(f *testing.F) {
	for _, fx := range rawFixtures() {
		f.Add([]byte(fx.raw), false)
	}
	f.Add([]byte("\n"), true)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n\x89PNG"), true)
	date := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw []byte, fast bool) {
		if len(raw) == 0 {
			return // no response: not a raw Exchange
		}
		level := gzip.DefaultCompression
		if fast {
			level = gzip.BestSpeed
		}
		ex := &Exchange{TargetURI: "http://fuzz.test/", RequestHead: []byte("GET / HTTP/1.1\r\nHost: fuzz.test\r\n\r\n"), Response: raw}
		r, _ := ParseResponse(raw)
		for _, of := range []*Revisit{nil, {TargetURI: "http://fuzz.test/0", Date: date}} {
			var b recordBuilder
			if err := b.rawResponse(ex, of, "<urn:uuid:x>", date, nil, level); err != nil {
				t.Fatal(err)
			}
			rec, err := NewWARCReader(bytes.NewReader(b.out.b)).Next()
			if err != nil {
				t.Fatal(err)
			}
			want := raw
			if of != nil {
				want = raw[:r.BodyStart]
			}
			if !bytes.Equal(rec.Block, want) {
				t.Fatalf("block %q, want %q", rec.Block, want)
			}
			if got := rec.Header.Get("WARC-Block-Digest"); got != sha1Digest(want) {
				t.Fatalf("block digest %s", got)
			}
			if got := rec.Header.Get("WARC-Payload-Digest"); got != r.PayloadDigest {
				t.Fatalf("payload digest %s, want %s", got, r.PayloadDigest)
			}
			if got := rec.Header.Get("WARC-Truncated"); (got == "unspecified") != r.Cut {
				t.Fatalf("WARC-Truncated %q for a response cut %v", got, r.Cut)
			}
		}
	})
}

func TestDecodeResponse(t *testing.T) {
	page := strings.Repeat("<p>a page for analysis</p>\n", 50)
	var z, raw bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte(page))
	zw.Close()
	fw, _ := flate.NewWriter(&raw, flate.BestSpeed)
	fw.Write([]byte(page))
	fw.Close()
	g := gzipped(page)
	var gzChunked rawFixture
	for _, fx := range rawFixtures() {
		if fx.name == "gzip chunked" {
			gzChunked = fx
		}
	}
	for _, c := range []struct {
		name, raw string
		limit     int64
		want      string
		cut       bool
		err       error
	}{
		{"gzip chunked", gzChunked.raw, 0, strings.Repeat("<p>gzip'd by the server, chunked on the wire</p>\n", 40), false, nil},
		{"zlib deflate", "HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n" + z.String(), 0, page, false, nil},
		{"raw deflate", "HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n" + raw.String(), 0, page, false, nil},
		{"x-gzip, limited", "HTTP/1.1 200 OK\r\nContent-Encoding: X-Gzip\r\n\r\n" + g, 100, page[:100], true, nil},
		{"identity", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", 0, "abc", false, nil},
		{"gzip twice", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Encoding: gzip\r\n\r\n" + gzipped(g), 0, page, false, nil},
		{"br", "HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\n\x0b\x02\x80abc\x03", 0, "\x0b\x02\x80abc\x03", false, ErrContentCoding},
		{"not gzip", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\nplain", 0, "", false, ErrContentCoding},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, cut, err := DecodeResponse([]byte(c.raw), c.limit)
			if !errors.Is(err, c.err) || c.err == nil && err != nil {
				t.Errorf("error %v, want %v", err, c.err)
			}
			if string(got) != c.want || cut != c.cut {
				t.Errorf("got %q cut %v, want %q cut %v", got, cut, c.want, c.cut)
			}
		})
	}
}

func FuzzDecodeResponse(f *testing.F) {
	for _, fx := range rawFixtures() {
		f.Add([]byte(fx.raw), int64(0))
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n"+gzipped(strings.Repeat("x", 1<<16))), int64(1000))
	f.Fuzz(func(t *testing.T, raw []byte, limit int64) {
		got, cut, err := DecodeResponse(raw, limit)
		if err != nil && !errors.Is(err, ErrContentCoding) && !errors.Is(err, ErrMalformedResponse) {
			t.Fatalf("error %v", err)
		}
		if limit > 0 && int64(len(got)) > limit || cut && limit <= 0 {
			t.Fatalf("%d bytes, cut %v, at limit %d", len(got), cut, limit)
		}
	})
}
