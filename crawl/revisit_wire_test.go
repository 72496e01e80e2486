package crawl

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/storage"
)

func wireDigest(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

func chunk(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(p), p)
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// wireCrawler is a Crawler with only what archiveResponse uses: an
// archive, a local payload index and options.
func wireCrawler(t *testing.T, dir string, logs *bytes.Buffer) (*Crawler, *storage.WARCWriter, *storePayloads, *storage.Store) {
	t.Helper()
	st, err := storage.Open(filepath.Join(dir, "store"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := openStorePayloads(StoreAdapter{st}, -1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := storage.NewWARCWriter(filepath.Join(dir, "warc"), storage.WARCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{RevisitMinSize: 16, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	return &Crawler{archive: w, payloads: p, opts: o}, w, p, st
}

// Revisits compare payloads as received: the same gzip'd bytes chunked
// differently are one payload, the same page gzip'd and identity-coded are
// two. Each record's block is the response as received, each revisit's
// the head as received, naming the original's record in WARC-Refers-To.
func TestRevisitsCompareWirePayloads(t *testing.T) {
	page := strings.Repeat("<p>one page, served gzip'd and identity-coded</p>\n", 30)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(page))
	zw.Close()
	g := gz.String()
	gzHead := "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
	idHead := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
	responses := []struct {
		path, raw, head string
		revisitOf       int // index of the original; -1: archived in full
		truncated       string
	}{
		{"/gz1", gzHead + chunk(g[:10], g[10:]), gzHead, -1, ""},
		{"/gz2", gzHead + chunk(g[:len(g)/2], g[len(g)/2:]), gzHead, 0, ""},
		{"/id1", idHead + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(page)) + page, "", -1, ""},
		{"/id2", idHead + "Transfer-Encoding: chunked\r\n\r\n" + chunk(page), idHead + "Transfer-Encoding: chunked\r\n\r\n", 2, ""},
		{"/cut", idHead + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(page)+9) + page, "", -1, "unspecified"},
	}
	var logs bytes.Buffer
	dir := t.TempDir()
	c, w, _, _ := wireCrawler(t, dir, &logs)
	ctx := context.Background()
	date := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	var refs []storage.WARCRef
	for _, r := range responses {
		res := &fetch.Result{URL: "http://wire.test" + r.path, Status: 200, FetchedAt: date, Body: []byte(page),
			RawRequest: []byte("GET " + r.path + " HTTP/1.1\r\nHost: wire.test\r\nAccept-Encoding: gzip\r\n\r\n"), RawResponse: []byte(r.raw)}
		var le storage.Entry
		ref, err := c.archiveResponse(ctx, exchange(res), res, &le, nil, &Capture{})
		if err != nil {
			t.Fatalf("%s: %v", r.path, err)
		}
		refs = append(refs, ref)
		if wantDup := r.revisitOf >= 0; (le.DuplicateOf != "") != wantDup {
			t.Errorf("%s: duplicate_of %q, want a revisit %v", r.path, le.DuplicateOf, wantDup)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := map[string]*storage.WARCRecord{}
	for _, rec := range readWARCs(t, filepath.Join(dir, "warc")) {
		if typ := rec.Header.Get("WARC-Type"); typ == "response" || typ == "revisit" {
			recs[rec.Header.Get("WARC-Target-URI")] = rec
		}
	}
	for i, r := range responses {
		rec := recs["http://wire.test"+r.path]
		if rec == nil {
			t.Fatalf("%s: no record", r.path)
		}
		if got := rec.Header.Get("WARC-Record-ID"); got != refs[i].ResponseID {
			t.Errorf("%s: record id %s, ref %s", r.path, got, refs[i].ResponseID)
		}
		if got := rec.Header.Get("WARC-Truncated"); got != r.truncated {
			t.Errorf("%s: WARC-Truncated %q, want %q", r.path, got, r.truncated)
		}
		wantDigest := wireDigest([]byte(page))
		if strings.HasPrefix(r.path, "/gz") {
			wantDigest = wireDigest(gz.Bytes()) // the content coding kept
		}
		if got := rec.Header.Get("WARC-Payload-Digest"); got != wantDigest {
			t.Errorf("%s: WARC-Payload-Digest %s, want %s", r.path, got, wantDigest)
		}
		if r.revisitOf < 0 {
			if rec.Header.Get("WARC-Type") != "response" || string(rec.Block) != r.raw {
				t.Errorf("%s: %s record, block %q, want the response as received", r.path, rec.Header.Get("WARC-Type"), rec.Block)
			}
			continue
		}
		orig := responses[r.revisitOf]
		if rec.Header.Get("WARC-Type") != "revisit" || string(rec.Block) != r.head ||
			rec.Header.Get("WARC-Refers-To") != refs[r.revisitOf].ResponseID ||
			rec.Header.Get("WARC-Refers-To-Target-URI") != "http://wire.test"+orig.path {
			t.Errorf("%s: %s record, block %q, refers to %s %s; want a revisit of %s (%s)", r.path, rec.Header.Get("WARC-Type"),
				rec.Block, rec.Header.Get("WARC-Refers-To"), rec.Header.Get("WARC-Refers-To-Target-URI"), orig.path, refs[r.revisitOf].ResponseID)
		}
	}
	if c.counters.revisits.Load() != 2 {
		t.Errorf("%d revisits counted, want 2", c.counters.revisits.Load())
	}
	if strings.Contains(logs.String(), "previous format") {
		t.Errorf("a fresh index logged a dropped one: %s", logs.String())
	}
}

// A payload index written by the previous format (digests of decoded
// bodies, no record ids) is dropped when the crawl resumes, with a log
// line, and the new index survives a reopen with its format recorded.
func TestPayloadIndexPreviousFormat(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.Open(filepath.Join(dir, "store"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The previous layout, as openStorePayloads and flush wrote it:
	// x/pd/<digest> = seq | date | URI, x/po/<seq> = digest, x/pm.
	const old = 5000 // more than one deletion batch
	date := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	err = st.Write(func(w storage.Writer) error {
		for i := range old {
			digest := fmt.Sprintf("sha1:OLD%05d", i)
			v := binary.BigEndian.AppendUint64(nil, uint64(i))
			v = binary.BigEndian.AppendUint64(v, uint64(date.UnixNano()))
			v = append(v, fmt.Sprintf("http://old/%d", i)...)
			if err := w.Set([]byte(payloadKeyPrefix+digest), v); err != nil {
				return err
			}
			if err := w.Set(binary.BigEndian.AppendUint64([]byte(payloadOrderPrefix), uint64(i)), []byte(digest)); err != nil {
				return err
			}
		}
		meta := binary.BigEndian.AppendUint64(nil, 0)
		meta = binary.BigEndian.AppendUint64(meta, old)
		if err := w.Set([]byte(payloadMetaKey), meta); err != nil {
			return err
		}
		return w.Set([]byte(nearDupURLPrefix+"keep"), []byte("another index's key"))
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	var logs bytes.Buffer
	c, _, p, st := wireCrawler(t, dir, &logs)
	if p.Len() != 0 {
		t.Errorf("reopened index holds %d digests, want a fresh one", p.Len())
	}
	n := 0
	end := []byte(payloadKeySpace)
	end[len(end)-1]++
	st.Ascend([]byte(payloadKeySpace), end, func(k, _ []byte) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d keys of the previous index left", n)
	}
	if _, err := st.Get([]byte(nearDupURLPrefix + "keep")); err != nil {
		t.Errorf("another index's key: %v", err)
	}
	ctx := context.Background()
	if _, found, err := p.TestAndAdd(ctx, "sha1:OLD00001", storage.Revisit{TargetURI: "http://new/1", Date: date, RecordID: "<urn:uuid:1>"}); err != nil || found {
		t.Errorf("an old digest: found %v, %v", found, err)
	}
	// The first archived response reports the drop.
	raw := "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n01234567890123456789"
	res := &fetch.Result{URL: "http://new/2", Status: 200, FetchedAt: date, RawRequest: []byte("GET /2 HTTP/1.1\r\nHost: new\r\n\r\n"), RawResponse: []byte(raw)}
	if _, err := c.archiveResponse(ctx, exchange(res), res, &storage.Entry{}, nil, &Capture{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "previous format dropped") || !strings.Contains(logs.String(), fmt.Sprintf("digests=%d", old)) {
		t.Errorf("log: %q", logs.String())
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	if v, err := st.Get([]byte(payloadVersionKey)); err != nil || string(v) != payloadFormat {
		t.Errorf("format %q, %v", v, err)
	}
	// Reopened: the new entries answer, with their record ids.
	p2, err := openStorePayloads(StoreAdapter{st}, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := p2.TestAndAdd(ctx, "sha1:OLD00001", storage.Revisit{TargetURI: "http://y/", Date: date})
	if err != nil || !found || got.TargetURI != "http://new/1" || got.RecordID != "<urn:uuid:1>" || !got.Date.Equal(date) {
		t.Errorf("after reopen: %+v found %v, %v", got, found, err)
	}
	// A format this code does not know is refused.
	if err := st.Write(func(w storage.Writer) error { return w.Set([]byte(payloadVersionKey), []byte("wire-sha256 v9")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := openStorePayloads(StoreAdapter{st}, -1); !errors.Is(err, ErrCorruptState) {
		t.Errorf("unknown format: %v, want ErrCorruptState", err)
	}
}
