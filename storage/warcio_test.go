package storage

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"github.com/layercrawl/layercrawl/internal/warciotest"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// warcioPrefix returns a directory holding node_modules/warcio
// (warciotest.Prefix: $WARCIO_PREFIX, else installed in a cache on first
// use; skipped without node, failed under CI=true).
func warcioPrefix(t *testing.T) string { return warciotest.Prefix(t) }

// warcioRecord is warcio.js's view of one record, as
// testdata/warcio_check.mjs prints it.
type warcioRecord = warciotest.Record

// TestWARCWarcio has the independent warcio.js parser read files written
// with rotation and compares every record with what the Go reader saw and
// with the digests warcio's side computes on its own.
//
// It runs at the default level and at BestSpeed, where small records go
// through appendFixedGzip instead of klauspost/compress.
func TestWARCWarcio(t *testing.T) {
	prefix := warcioPrefix(t)
	for _, level := range []int{gzip.DefaultCompression, gzip.BestSpeed} {
		t.Run(fmt.Sprintf("level%d", level), func(t *testing.T) { testWARCWarcio(t, prefix, level) })
	}
}

func testWARCWarcio(t *testing.T, prefix string, level int) {
	dir := t.TempDir()
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "test", MaxFileSize: 8 << 10, GzipLevel: level, Info: map[string]string{"operator": "warcio test"}})
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(4) {
		for _, ex := range testExchanges(seed) {
			ref, err := w.Write(ex)
			if err != nil {
				t.Fatal(err)
			}
			// A revisit of every exchange, as the crawl writes for a
			// payload it archived before.
			again := *ex
			again.TargetURI += "&again"
			if _, err := w.WriteRevisit(&again, Revisit{TargetURI: ex.TargetURI, Date: ex.Date, RecordID: ref.ResponseID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Responses as servers wrote them, and revisits of them.
	warcioDiffers := map[string]string{} // target URI -> why
	for _, fx := range rawFixtures() {
		ex := &Exchange{TargetURI: "http://raw.example/" + strings.ReplaceAll(fx.name, " ", "-"),
			RequestHead: []byte("GET / HTTP/1.1\r\nHost: raw.example\r\n\r\n"), Response: []byte(fx.raw)}
		ref, err := w.Write(ex)
		if err != nil {
			t.Fatal(err)
		}
		if fx.warcio != "" {
			warcioDiffers[ex.TargetURI] = fx.warcio
		}
		again := *ex
		again.TargetURI += "-again"
		if _, err := w.WriteRevisit(&again, Revisit{TargetURI: ex.TargetURI, Date: time.Now(), RecordID: ref.ResponseID}); err != nil {
			t.Fatal(err)
		}
	}
	// A PNG larger than one stored block: written without compression.
	png := make([]byte, 70_000)
	for i := range png {
		png[i] = byte(i * 7 % 251)
	}
	ex := testExchanges(0)[0]
	ex.ResponseHead = ResponseHead("HTTP/1.1", 200, http.Header{"Content-Type": {"image/png"}}, len(png))
	ex.Body = png
	if _, err := w.Write(ex); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := readWARCDir(t, dir)
	if len(files) < 2 {
		t.Fatalf("want rotation into several files, got %d", len(files))
	}
	args := []string{filepath.Join("testdata", "warcio_check.mjs"), prefix}
	var goRecs []*WARCRecord
	var goFiles []string
	for _, wf := range files {
		checkWARCFile(t, wf)
		args = append(args, filepath.Join(dir, wf.name))
		for _, r := range wf.records {
			goRecs = append(goRecs, r)
			goFiles = append(goFiles, wf.name)
		}
	}
	cmd := exec.Command("node", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("warcio.js: %v\n%s", err, stderr.String())
	}
	var js []warcioRecord
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r warcioRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("warcio output %q: %v", sc.Text(), err)
		}
		js = append(js, r)
	}
	if len(js) != len(goRecs) {
		t.Fatalf("warcio read %d records, Go %d", len(js), len(goRecs))
	}
	for i, j := range js {
		g := goRecs[i]
		where := fmt.Sprintf("%s record %d (%s %s)", goFiles[i], i, g.Header.Get("WARC-Type"), g.Header.Get("WARC-Target-URI"))
		if j.File != goFiles[i] || j.Offset != g.Offset {
			t.Errorf("%s: warcio at %s:%d, Go at %d", where, j.File, j.Offset, g.Offset)
		}
		if j.Type != g.Header.Get("WARC-Type") {
			t.Errorf("%s: warcio type %q", where, j.Type)
		}
		if len(j.Headers) != len(g.Header) {
			t.Errorf("%s: warcio saw %d fields, Go %d", where, len(j.Headers), len(g.Header))
		}
		for _, f := range g.Header {
			if got := j.Headers[f.Name]; got != f.Value {
				t.Errorf("%s: warcio %s = %q, want %q", where, f.Name, got, f.Value)
			}
		}
		if j.BlockSHA1 != g.Header.Get("WARC-Block-Digest") || j.BlockLen != len(g.Block) {
			t.Errorf("%s: warcio block %s (%d bytes), header %s (%d bytes)", where, j.BlockSHA1, j.BlockLen, g.Header.Get("WARC-Block-Digest"), len(g.Block))
		}
		if j.Type == "revisit" {
			if j.Headers["WARC-Profile"] != RevisitProfile || j.BlockLen != len(g.Block) {
				t.Errorf("%s: warcio revisit profile %q, block %d bytes", where, j.Headers["WARC-Profile"], j.BlockLen)
			}
			continue
		}
		if j.Type != "request" && j.Type != "response" {
			continue
		}
		// warcio's bytes after the first HTTP head, and its entity (1xx
		// skipped, chunks joined): the latter is WARC-Payload-Digest.
		if why := warcioDiffers[g.Header.Get("WARC-Target-URI")]; why != "" && j.Type == "response" {
			t.Logf("%s: warcio.js's payload not compared: %s", where, why)
			continue
		}
		head, payload, _ := HTTPPayload(g.Block)
		if j.PayloadSHA1 != sha1Digest(payload) || j.PayloadLen != len(payload) {
			t.Errorf("%s: warcio payload %s (%d bytes), want %s (%d bytes)", where, j.PayloadSHA1, j.PayloadLen, sha1Digest(payload), len(payload))
		}
		if j.EntitySHA1 != g.Header.Get("WARC-Payload-Digest") {
			t.Errorf("%s: warcio entity %s (%d bytes), header %s", where, j.EntitySHA1, j.EntityLen, g.Header.Get("WARC-Payload-Digest"))
		}
		first, _, _ := strings.Cut(string(g.Block), "\n")
		if first = strings.TrimSuffix(first, "\r"); j.StatusLine != first {
			t.Errorf("%s: warcio status line %q, want %q", where, j.StatusLine, first)
		}
		if j.Type == "response" {
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
			if err != nil {
				t.Logf("%s: Go cannot parse the response head (%v): a raw fixture", where, err)
				continue
			}
			for k := range resp.Header {
				var got string
				for name, v := range j.HTTP {
					if strings.EqualFold(name, k) {
						got = v
					}
				}
				// warcio keeps the last of repeated fields, or joins them.
				if vs := resp.Header[k]; got != vs[0] && got != vs[len(vs)-1] && got != strings.Join(vs, ", ") {
					t.Errorf("%s: warcio HTTP %s = %q, want %q", where, k, got, resp.Header.Get(k))
				}
			}
		}
	}
	if testing.Verbose() && len(js) > 2 {
		t.Logf("warcio's view of record 2: %+v", js[2])
	}
	t.Logf("warcio.js %s read %d records in %d files", warciotest.Version, len(js), len(files))
}
