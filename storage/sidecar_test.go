package storage

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawResponses are responses as captured from a connection (the crawl's
// form), framed every way the index's status and media type must survive.
var rawResponses = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: Text/CSS\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\r\nmissing",
	"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 100\r\n\r\n\x89PNG cut short",
	"HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n",
	"HTTP/1.0 200 OK\nContent-Type: application/json\n\n{}",
	"not a status line\r\nContent-Type: text/html\r\n\r\nbody",
	"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n", // cut in the head
	"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n",
}

// writeSidecarCrawl writes, with a writer that keeps sidecar indexes in
// dir/indexes/perwarc, responses (both forms), revisits of them and
// metadata records over files rotated small. It returns how many index
// lines it wrote. Unless close is false it closes the writer.
func writeSidecarCrawl(t testing.TB, dir, prefix string, rounds int, close bool) int {
	t.Helper()
	w, err := NewWARCWriter(filepath.Join(dir, "warc"), WARCOptions{Prefix: prefix, MaxFileSize: 8 << 10,
		GzipLevel: 1, IndexDir: filepath.Join(dir, CrawlSidecarDir)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	date := time.Date(2026, 11, 28, 13, 0, 0, 987654321, time.UTC)
	for r := range rounds {
		exs := testExchanges(uint64(r))
		for i, raw := range rawResponses {
			exs = append(exs, &Exchange{TargetURI: fmt.Sprintf("http://raw.example/%d?r=%d", i, r%2), Date: date.Add(time.Duration(i) * time.Second),
				RequestHead: []byte("GET / HTTP/1.1\r\nHost: raw.example\r\n\r\n"), Response: []byte(raw),
				Metadata: []byte("hopsFromSeed: L\r\n")})
		}
		for i, ex := range exs {
			ex.Date = ex.Date.Add(time.Duration(r*10+i) * time.Minute)
			ref, err := w.Write(ex)
			if err != nil {
				t.Fatal(err)
			}
			if ref.ResponseLength <= 0 || ref.ResponseOffset <= ref.Offset {
				t.Fatalf("ref %+v", ref)
			}
			again := *ex
			again.Date = ex.Date.Add(time.Hour)
			if _, err := w.WriteRevisit(&again, Revisit{TargetURI: ex.TargetURI, Date: ex.Date, RecordID: ref.ResponseID}); err != nil {
				t.Fatal(err)
			}
			n += 2
		}
	}
	if close {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// indexBoth indexes dir's WARC files by reading them and from their
// sidecars, and checks that the two are byte for byte the same. It returns
// the index and the stats of the run with sidecars.
func indexBoth(t *testing.T, dir string) ([]byte, IndexStats) {
	t.Helper()
	files, err := CrawlWARCFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var read, side bytes.Buffer
	rst, err := IndexWARCs(context.Background(), &read, files, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sst, err := IndexWARCs(context.Background(), &side, files, IndexOptions{SidecarDir: filepath.Join(dir, CrawlSidecarDir)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read.Bytes(), side.Bytes()) {
		t.Fatalf("the index from sidecars differs from the one read:\nread:\n%s\nsidecars:\n%s", read.String(), side.String())
	}
	if rst.Records != sst.Records || rst.Files != sst.Files || !slices.Equal(rst.Torn, sst.Torn) {
		t.Errorf("stats read %+v, from sidecars %+v", rst, sst)
	}
	return side.Bytes(), sst
}

// TestSidecarIndex checks that the index written from the writer's
// sidecars is byte for byte the one read from the WARC files: responses
// of both forms, revisits, metadata records (not indexed), several files;
// then a resumed crawl whose first writer was closed (every file from its
// sidecar) and one whose writer was killed (its last file read, the
// others from their sidecars).
func TestSidecarIndex(t *testing.T) {
	dir := t.TempDir()
	want := writeSidecarCrawl(t, dir, "a", 3, true)
	idx, st := indexBoth(t, dir)
	files, _ := CrawlWARCFiles(dir)
	if len(files) < 3 || st.Sidecars != len(files) || st.Records != int64(want) || bytes.Count(idx, []byte("\n")) != want {
		t.Fatalf("%d files, stats %+v, %d lines; want %d lines, all files from sidecars", len(files), st, bytes.Count(idx, []byte("\n")), want)
	}
	if !bytes.Contains(idx, []byte(`"mime":"warc/revisit"`)) || !bytes.Contains(idx, []byte(`"mime":"text/css","status":"200"`)) ||
		!bytes.Contains(idx, []byte(`"mime":"text/plain","status":"404"`)) {
		t.Errorf("index lacks the expected lines:\n%s", idx)
	}

	// Resumed after a clean stop: a new writer's files beside the old.
	want += writeSidecarCrawl(t, dir, "a", 1, true)
	_, st = indexBoth(t, dir)
	files2, _ := CrawlWARCFiles(dir)
	if st.Sidecars != len(files2) || len(files2) <= len(files) || st.Records != int64(want) {
		t.Errorf("resumed: %d files, stats %+v; want %d records, all from sidecars", len(files2), st, want)
	}

	// Killed: a writer never closed leaves a sidecar without its trailer
	// (perhaps not even flushed); the resumed crawl's index reads that
	// file and takes the others' sidecars.
	killed := t.TempDir()
	writeSidecarCrawl(t, killed, "k", 2, false)
	writeSidecarCrawl(t, killed, "k", 1, true)
	_, st = indexBoth(t, killed)
	kf, _ := CrawlWARCFiles(killed)
	if st.Sidecars != len(kf)-1 {
		t.Errorf("killed then resumed: %d of %d files from sidecars, want all but the killed writer's last", st.Sidecars, len(kf))
	}

	// The index WriteCrawlIndex writes with the sidecars is the one read.
	if _, err := WriteCrawlIndex(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, CrawlIndexPath))
	if idx, _ := indexBoth(t, dir); !bytes.Equal(got, idx) {
		t.Error("WriteCrawlIndex's index differs")
	}
}

// TestSidecarDamaged: a sidecar cut short, with a byte changed, with a
// line that parses but is not the writer's form, from an older writer (no
// trailer), or for a WARC file that was cut or grew after it was written,
// is not used: the file is read and the index is the one read.
func TestSidecarDamaged(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, side, warc string)
	}{
		{"cut", func(t *testing.T, side, warc string) { truncateBy(t, side, 7) }},
		{"no trailer", func(t *testing.T, side, warc string) {
			b := readFile(t, side)
			i := bytes.LastIndex(b[:len(b)-1], []byte("\n"))
			writeFile(t, side, b[:i+1])
		}},
		{"byte changed", func(t *testing.T, side, warc string) {
			b := readFile(t, side)
			b[len(b)/3] ^= 0x01
			writeFile(t, side, b)
		}},
		{"other line form, checksum fixed", func(t *testing.T, side, warc string) {
			b := readFile(t, side)
			i := bytes.LastIndex(b[:len(b)-1], []byte("\n"))
			body := bytes.Replace(b[:i+1], []byte(`"status":"200"`), []byte(`"status":200`), 1)
			_, lines, _, _ := parseSidecarTrailer(b[i+1:])
			size := fileSize(t, warc)
			writeFile(t, side, appendSidecarTrailer(body, size, lines, crc32Of(body)))
		}},
		{"WARC cut", func(t *testing.T, side, warc string) { truncateBy(t, warc, 10) }},
		{"WARC grew", func(t *testing.T, side, warc string) {
			f, err := os.OpenFile(warc, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(readFile(t, warc)) // its own records again: still a WARC file
			f.Close()
		}},
		{"missing", func(t *testing.T, side, warc string) { os.Remove(side) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSidecarCrawl(t, dir, "d", 1, true)
			files, _ := CrawlWARCFiles(dir)
			warc := files[1]
			c.damage(t, filepath.Join(dir, CrawlSidecarDir, filepath.Base(warc)+sidecarExt), warc)
			_, st := indexBoth(t, dir)
			if st.Sidecars != len(files)-1 {
				t.Errorf("%d of %d files from sidecars, want all but the damaged one's", st.Sidecars, len(files))
			}
		})
	}
}

// TestSidecarOff: without IndexDir no sidecar is written; with --no-index's
// crawl directory layout, IndexWARCs reads every file.
func TestSidecarOff(t *testing.T) {
	dir := t.TempDir()
	files, _ := writeIndexedCrawl(t, dir, 1)
	if _, err := os.Stat(filepath.Join(dir, "indexes")); !os.IsNotExist(err) {
		t.Errorf("indexes/ written without IndexDir: %v", err)
	}
	var b bytes.Buffer
	st, err := IndexWARCs(context.Background(), &b, files, IndexOptions{SidecarDir: filepath.Join(dir, CrawlSidecarDir)})
	if err != nil || st.Sidecars != 0 || st.Files != len(files) {
		t.Errorf("stats %+v, %v", st, err)
	}
}

// FuzzSidecarEntry writes a response given as raw bytes (or as a head and
// a body), and a revisit of it, with a sidecar, and checks the sidecar's
// lines against the index read back: the same, whenever the file reads.
func FuzzSidecarEntry(f *testing.F) {
	for _, r := range rawResponses {
		f.Add(r, "http://a.example/", "sha1:", false)
	}
	f.Add("HTTP/1.1 100 Continue\r\n\r\n", "<http://a.example/>", "", true)
	// As a head and a body: the final head is in the body.
	f.Add("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/x\r\n\r\nbody", "http://a.example/", "", true)
	f.Add("HTTP/1.1 200 OK\r\nContent-Type: \"x\"\r\n\r\n", "http://a.example/\u00a0", " sha1:x", true)
	f.Fuzz(func(t *testing.T, resp, uri, digest string, headForm bool) {
		dir := t.TempDir()
		w, err := NewWARCWriter(filepath.Join(dir, "warc"), WARCOptions{IndexDir: filepath.Join(dir, "side")})
		if err != nil {
			t.Fatal(err)
		}
		ex := &Exchange{TargetURI: uri, Date: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			RequestHead: []byte("GET / HTTP/1.1\r\n\r\n"), Response: []byte(resp), PayloadDigest: digest}
		if headForm {
			head, body, _ := strings.Cut(resp, "\r\n\r\n")
			ex.Response, ex.ResponseHead, ex.Body = nil, []byte(head), []byte(body)
		}
		ref, err := w.Write(ex)
		if err != nil {
			return // an exchange the writer refuses
		}
		if _, err := w.WriteRevisit(ex, Revisit{TargetURI: "http://a.example/", Date: ex.Date, RecordID: ref.ResponseID}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
		var read, side bytes.Buffer
		rst, err := IndexWARCs(context.Background(), &read, files, IndexOptions{})
		if err != nil || len(rst.Torn) > 0 {
			return // the read-back fails: nothing to compare with
		}
		sst, err := IndexWARCs(context.Background(), &side, files, IndexOptions{SidecarDir: filepath.Join(dir, "side")})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(read.Bytes(), side.Bytes()) {
			t.Fatalf("sidecar %+v:\n%s\nread back:\n%s", sst, side.String(), read.String())
		}
	})
}

// FuzzScanSidecar: any bytes, as a sidecar, are refused or give lines
// that parse, name the file, lie inside it and re-format to themselves,
// as many as the trailer says, followed by the trailer alone.
func FuzzScanSidecar(f *testing.F) {
	dir := f.TempDir()
	writeSidecarCrawl(f, dir, "f", 1, true)
	sides, _ := filepath.Glob(filepath.Join(dir, CrawlSidecarDir, "*"))
	for _, s := range sides[:2] {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		size := fileSize(f, filepath.Join(dir, "warc", strings.TrimSuffix(filepath.Base(s), sidecarExt)))
		f.Add(b, strings.TrimSuffix(filepath.Base(s), sidecarExt), size)
	}
	f.Add([]byte(sidecarMagic+"size=0 lines=0 crc32c=00000000\n"), "x", int64(0))
	f.Fuzz(func(t *testing.T, data []byte, name string, size int64) {
		var body []byte
		n, err := scanSidecar(bytes.NewReader(data), int64(len(data)), name, size, true, nil)
		if err != nil {
			return
		}
		// The second pass, unverified, gives the lines the first checked.
		n2, err := scanSidecar(bytes.NewReader(data), int64(len(data)), name, size, false, func(line []byte) error {
			body = append(body, line...)
			return nil
		})
		if err != nil || n2 != n {
			t.Fatalf("second pass: %d lines, %v; the first %d", n2, err, n)
		}
		if !bytes.HasPrefix(data, body) {
			t.Fatal("the lines are not the start of the data")
		}
		got, lines, _, ok := parseSidecarTrailer(data[len(body):])
		if !ok || got != size || lines != n {
			t.Fatalf("trailer %q accepted for size %d, %d lines", data[len(body):], size, n)
		}
		var k int64
		for line := range bytes.Lines(body) {
			e, err := ParseCDXJLine(line)
			if err != nil || e.Filename != name || e.Offset+e.Length > size || !bytes.Equal(e.AppendLine(nil), line) {
				t.Fatalf("accepted line %q: %+v %v", line, e, err)
			}
			k++
		}
		if k != n {
			t.Fatalf("%d lines, scanSidecar says %d", k, n)
		}
	})
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func truncateBy(t *testing.T, p string, n int64) {
	t.Helper()
	if err := os.Truncate(p, fileSize(t, p)-n); err != nil {
		t.Fatal(err)
	}
}

func crc32Of(b []byte) uint32 { return crc32.Checksum(b, crc32c) }

// TestSidecarConcurrent writes from several goroutines, with Syncs (a
// crawl's checkpoints) among the writes and files rotated small: every
// line lands in the sidecar of the file its record went to (run with
// -race).
func TestSidecarConcurrent(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWARCWriter(filepath.Join(dir, "warc"), WARCOptions{MaxFileSize: 16 << 10, GzipLevel: 1,
		IndexDir: filepath.Join(dir, CrawlSidecarDir)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for g := range 4 {
		wg.Go(func() {
			for i := range 40 {
				raw := rawResponses[i%len(rawResponses)]
				ex := &Exchange{TargetURI: fmt.Sprintf("http://c.example/%d/%d", g, i), RequestHead: []byte("GET / HTTP/1.1\r\n\r\n"), Response: []byte(raw)}
				if _, err := w.Write(ex); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if err := w.Sync(); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, st := indexBoth(t, dir)
	if st.Records != 160 || st.Sidecars != st.Files || st.Files < 2 {
		t.Errorf("stats %+v, want 160 records, every file from its sidecar", st)
	}
}

// TestSidecarLongLine: a line longer than the reader's buffer (a 200 KB
// URL) is read whole from the sidecar.
func TestSidecarLongLine(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWARCWriter(filepath.Join(dir, "warc"), WARCOptions{IndexDir: filepath.Join(dir, CrawlSidecarDir)})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://l.example/?q=" + strings.Repeat("x", 200<<10), "http://l.example/short"} {
		if _, err := w.Write(&Exchange{TargetURI: u, RequestHead: []byte("GET / HTTP/1.1\r\n\r\n"), Response: []byte(rawResponses[0])}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if idx, st := indexBoth(t, dir); st.Sidecars != 1 || len(idx) < 200<<10 {
		t.Errorf("stats %+v, %d index bytes", st, len(idx))
	}
}
