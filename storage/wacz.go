package storage

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// WACZVersion is the version of the WACZ specification PackWACZ writes
// (https://specs.webrecorder.net/wacz/1.1.1/).
const WACZVersion = "1.1.1"

// WACZOptions configures PackWACZ. The zero value is valid.
type WACZOptions struct {
	// Software is datapackage.json's "software". Default "layercrawl".
	Software string
	// Title is datapackage.json's "title". Default "layercrawl crawl of
	// " and the first seed's URL (or of the directory's name).
	Title string
	// MemoryLimit bounds the index lines sorted in memory, as
	// IndexOptions.MemoryLimit. Default 64 MiB.
	MemoryLimit int64
	// CompressIndexAbove is the number of index lines above which the
	// index is written as indexes/index.cdx.gz, gzip members of
	// IndexBlockLines lines each, with indexes/index.idx naming the first
	// key of each ("cdxj-gzip-1.0", as py-wacz writes it): ReplayWeb.page
	// then loads only the blocks a page needs, where it loads a whole
	// index.cdxj when it opens the file. Default 100000; negative: always
	// index.cdxj.
	CompressIndexAbove int64
	// IndexBlockLines is the number of lines of a block of index.cdx.gz.
	// Default 3000 (pywb's ZipNum and py-wacz's).
	IndexBlockLines int

	now func() time.Time // tests; default time.Now
}

// WACZStats says what PackWACZ wrote.
type WACZStats struct {
	WARCFiles int   // archive/ files
	Records   int64 // index lines
	Pages     int   // pages.jsonl lines after its header
	Seeds     int   // of Pages, the seeds (first)
	Bytes     int64 // size of the WACZ file
}

// maxTitlePrefix is how much of an HTML page's decoded body is searched
// for its <title>.
const maxTitlePrefix = 256 << 10

// PackWACZ writes the crawl output directory dir as a WACZ 1.1.1 package
// at out: archive/ holds dir's WARC files as they are; indexes/index.cdxj
// their CDXJ index (IndexWARCs), or, past WACZOptions.CompressIndexAbove
// lines, indexes/index.cdx.gz and index.idx; pages/pages.jsonl a header line, then the
// seeds (entries at depth 0 without a via of the crawl's logs,
// crawl.log.jsonl or a Redis worker's crawl-WORKER.log.jsonl, in log
// order, which have a record in the archive), then every other HTML page archived with
// status 200, in archive order, each with its <title> when it has one;
// datapackage.json lists every file with its SHA-256 and size, and
// datapackage-digest.json the SHA-256 of datapackage.json. Every zip entry
// is STORED: the WARC files are compressed already, and ReplayWeb.page
// reads ranges of them through the zip.
//
// out is written to a temporary file beside it and renamed into place
// once complete and synced (WriteFileAtomic): on any error, out is left as
// it was. A WARC file that changes while it is packed (a crawl still
// writing it) is an error. The index lines are sorted in bounded memory;
// the seeds' URLs are held in memory, the other pages go through a
// temporary file.
func PackWACZ(ctx context.Context, dir, out string, opts WACZOptions) (WACZStats, error) {
	if opts.Software == "" {
		opts.Software = "layercrawl"
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.CompressIndexAbove == 0 {
		opts.CompressIndexAbove = 100000
	}
	if opts.IndexBlockLines <= 0 {
		opts.IndexBlockLines = 3000
	}
	var st WACZStats
	files, err := CrawlWARCFiles(dir)
	if err != nil {
		return st, err
	}
	if len(files) == 0 {
		return st, fmt.Errorf("%w: %s has no WARC files in warc/", ErrNotCrawlDir, dir)
	}
	// A local crawl's log, or a Redis worker's (crawl-WORKER.log.jsonl;
	// workers may share a directory).
	logs, err := filepath.Glob(filepath.Join(dir, "crawl*.log.jsonl"))
	if err != nil {
		return st, fmt.Errorf("storage: wacz: %w", err)
	}
	seeds := seedSet{index: map[string]int{}}
	for _, l := range logs {
		if err := seeds.read(l); err != nil {
			return st, err
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".wacz-work-*")
	if err != nil {
		return st, fmt.Errorf("storage: wacz: %w", err)
	}
	defer os.RemoveAll(tmp)

	indexPath, pagesPath := filepath.Join(tmp, "index.cdxj"), filepath.Join(tmp, "pages.jsonl")
	others, err := os.Create(filepath.Join(tmp, "other-pages.jsonl"))
	if err != nil {
		return st, fmt.Errorf("storage: wacz: %w", err)
	}
	defer others.Close()
	ow := bufio.NewWriter(others)
	seedPages := make([]*waczPage, len(seeds.order))
	visit := func(rec *WARCRecord, e *CDXJEntry) error {
		id := rec.Header.Get("WARC-Record-ID")
		i, isSeed := seeds.index[id]
		isHTML := rec.Header.Get("WARC-Type") == "response" && e.Status == 200 && (e.Mime == "text/html" || e.Mime == "application/xhtml+xml")
		if !isSeed && !isHTML {
			return nil
		}
		date, _ := time.Parse(time.RFC3339Nano, rec.Header.Get("WARC-Date"))
		p := &waczPage{
			ID:  strings.TrimSuffix(strings.TrimPrefix(id, "<urn:uuid:"), ">"),
			URL: e.URL, TS: date.UTC().Format(time.RFC3339),
		}
		if isHTML {
			p.Title = pageTitle(rec.Block)
		}
		if isSeed {
			seedPages[i] = p
			return nil
		}
		st.Pages++
		return writeJSONLine(ow, p)
	}
	iw, err := os.Create(indexPath)
	if err != nil {
		return st, fmt.Errorf("storage: wacz: %w", err)
	}
	ist, err := IndexWARCs(ctx, iw, files, IndexOptions{MemoryLimit: opts.MemoryLimit, TempDir: tmp, Visit: visit})
	if cerr := iw.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ow.Flush()
	}
	if err != nil {
		return st, fmt.Errorf("storage: wacz: %w", err)
	}
	st.Records, st.WARCFiles = ist.Records, len(files)

	// pages.jsonl: the header, the seeds, the other pages.
	var mainPage *waczPage
	err = func() error {
		f, err := os.Create(pagesPath)
		if err != nil {
			return err
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		if _, err := w.WriteString(`{"format":"json-pages-1.0","id":"pages","title":"All Pages"}` + "\n"); err != nil {
			return err
		}
		for _, p := range seedPages {
			if p == nil {
				continue
			}
			if mainPage == nil {
				mainPage = p
			}
			st.Seeds++
			if err := writeJSONLine(w, p); err != nil {
				return err
			}
		}
		if _, err := others.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.Copy(w, others); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return f.Close()
	}()
	if err != nil {
		return st, fmt.Errorf("storage: wacz: pages: %w", err)
	}
	st.Pages += st.Seeds

	entries := make([]waczEntry, 0, len(files)+2)
	for _, f := range files {
		entries = append(entries, waczEntry{src: f, path: "archive/" + filepath.Base(f)})
	}
	if opts.CompressIndexAbove >= 0 && st.Records > opts.CompressIndexAbove {
		gz, idx := filepath.Join(tmp, "index.cdx.gz"), filepath.Join(tmp, "index.idx")
		if err := compressIndex(indexPath, gz, idx, opts.IndexBlockLines); err != nil {
			return st, fmt.Errorf("storage: wacz: %w", err)
		}
		entries = append(entries, waczEntry{src: gz, path: "indexes/index.cdx.gz"}, waczEntry{src: idx, path: "indexes/index.idx"})
	} else {
		entries = append(entries, waczEntry{src: indexPath, path: CrawlIndexPath})
	}
	entries = append(entries, waczEntry{src: pagesPath, path: "pages/pages.jsonl"})
	created := opts.now().UTC().Truncate(time.Second)
	title := opts.Title
	if title == "" {
		title = "layercrawl crawl of " + filepath.Base(filepath.Clean(dir))
		if mainPage != nil {
			title = "layercrawl crawl of " + mainPage.URL
		}
	}
	err = WriteFileAtomic(out, func(w io.Writer) error {
		cw := &countingWriter{w: w}
		zw := zip.NewWriter(cw)
		for i := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := entries[i].store(zw, created); err != nil {
				return err
			}
		}
		dp := datapackage{
			Profile: "data-package", WACZVersion: WACZVersion, Title: title,
			Created: created.Format(time.RFC3339), Software: opts.Software,
		}
		if mainPage != nil {
			dp.MainPageURL, dp.MainPageDate = mainPage.URL, mainPage.TS
		}
		for _, e := range entries {
			dp.Resources = append(dp.Resources, waczResource{Name: filepath.Base(e.path), Path: e.path, Hash: "sha256:" + e.sha256, Bytes: e.size})
		}
		dpJSON, err := json.MarshalIndent(dp, "", "  ")
		if err != nil {
			return err
		}
		sum := sha256.Sum256(dpJSON)
		digest, err := json.MarshalIndent(map[string]string{"path": "datapackage.json", "hash": "sha256:" + hex.EncodeToString(sum[:])}, "", "  ")
		if err != nil {
			return err
		}
		for _, m := range []struct {
			name string
			b    []byte
		}{{"datapackage.json", dpJSON}, {"datapackage-digest.json", digest}} {
			if err := storeBytes(zw, m.name, m.b, created); err != nil {
				return err
			}
		}
		if err := zw.Close(); err != nil {
			return err
		}
		st.Bytes = cw.n
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("storage: wacz %s: %w", out, err)
	}
	return st, nil
}

// compressIndex writes the sorted CDXJ file src as gz, gzip members of
// block lines each, and its secondary index idx: a "!meta" line, then per
// member its first line's key and timestamp with the member's offset and
// length in gz.
func compressIndex(src, gz, idx string, block int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	gf, err := os.Create(gz)
	if err != nil {
		return err
	}
	defer gf.Close()
	xf, err := os.Create(idx)
	if err != nil {
		return err
	}
	defer xf.Close()
	gw, xw := &countingWriter{w: bufio.NewWriterSize(gf, 1<<20)}, bufio.NewWriter(xf)
	if _, err := xw.WriteString(`!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}` + "\n"); err != nil {
		return err
	}
	r := bufio.NewReaderSize(in, 1<<20)
	var buf bytes.Buffer
	var first []byte
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		start := gw.n
		zw := gzip.NewWriter(gw)
		if _, err := zw.Write(buf.Bytes()); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		key, rest, _ := bytes.Cut(first, []byte(" "))
		ts, _, _ := bytes.Cut(rest, []byte(" "))
		if _, err := fmt.Fprintf(xw, "%s %s {\"offset\":%d,\"length\":%d,\"filename\":\"index.cdx.gz\"}\n", key, ts, start, gw.n-start); err != nil {
			return err
		}
		buf.Reset()
		n = 0
		return nil
	}
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if n == 0 {
				first = append(first[:0], line...)
			}
			buf.Write(line)
			n++
			if n == block {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := gw.w.(*bufio.Writer).Flush(); err != nil {
		return err
	}
	if err := xw.Flush(); err != nil {
		return err
	}
	if err := gf.Close(); err != nil {
		return err
	}
	return xf.Close()
}

// waczPage is one line of pages.jsonl.
type waczPage struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	TS    string `json:"ts"`
	Title string `json:"title,omitempty"`
}

type waczResource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

type datapackage struct {
	Profile      string         `json:"profile"`
	WACZVersion  string         `json:"wacz_version"`
	Title        string         `json:"title"`
	Created      string         `json:"created"`
	Software     string         `json:"software"`
	MainPageURL  string         `json:"mainPageUrl,omitempty"`
	MainPageDate string         `json:"mainPageDate,omitempty"`
	Resources    []waczResource `json:"resources"`
}

func writeJSONLine(w *bufio.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// seedSet is the seeds of a crawl's logs: the WARC record IDs of the
// responses to their depth-0 fetches without a via, in log order.
type seedSet struct {
	order []string
	index map[string]int
}

// read adds the seeds of the crawl log at path.
func (s *seedSet) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("storage: wacz: %w", err)
	}
	defer f.Close()
	err = ReadCrawlLog(f, func(e Entry) error {
		if e.Depth != 0 || e.Via != "" || e.WARCRecordID == "" {
			return nil
		}
		if _, dup := s.index[e.WARCRecordID]; !dup {
			s.index[e.WARCRecordID] = len(s.order)
			s.order = append(s.order, e.WARCRecordID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storage: wacz: %s: %w", path, err)
	}
	return nil
}

// pageTitle returns the text of the first <title> of an archived HTML
// response (raw: the record's block), decoded from the page's charset,
// spaces collapsed; "" when it has none or the body does not decode.
func pageTitle(raw []byte) string {
	body, _, err := DecodeResponse(raw, maxTitlePrefix)
	if err != nil {
		return ""
	}
	r, _ := parseResponse(raw, func([]byte) {})
	ct := ""
	if r.BodyStart >= r.HeadStart {
		ct = headerValue(raw[r.HeadStart:r.BodyStart], "Content-Type")
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	var title []byte
	in := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			if in {
				return cleanTitle(title, body, ct)
			}
			return ""
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "title":
				in = true
			case "body":
				return ""
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); in && string(name) == "title" {
				return cleanTitle(title, body, ct)
			}
		case html.TextToken:
			if in {
				title = append(title, z.Text()...)
			}
		}
	}
}

func cleanTitle(title, body []byte, contentType string) string {
	enc, _, _ := charset.DetermineEncoding(body, contentType)
	s, err := enc.NewDecoder().String(string(title))
	if err != nil {
		s = string(title)
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
}

// waczEntry is a file to store in the zip, and what was found hashing it.
type waczEntry struct {
	src, path string
	sha256    string // hex
	size      int64
}

// store hashes the file, then stores it in zw uncompressed with its CRC
// and sizes in its local header (no data descriptor), checking while it
// copies that the file still holds the bytes it hashed.
func (e *waczEntry) store(zw *zip.Writer, mod time.Time) error {
	sum, crc, size, err := hashFile(e.src)
	if err != nil {
		return err
	}
	e.sha256, e.size = hex.EncodeToString(sum), size
	fh := &zip.FileHeader{Name: e.path, Method: zip.Store, CRC32: crc,
		CompressedSize64: uint64(size), UncompressedSize64: uint64(size)}
	setModTime(fh, mod)
	w, err := zw.CreateRaw(fh)
	if err != nil {
		return err
	}
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	c := crc32.NewIEEE()
	n, err := io.Copy(io.MultiWriter(w, c), io.LimitReader(f, size+1))
	if err != nil {
		return err
	}
	if n != size || c.Sum32() != crc {
		return fmt.Errorf("%s changed while it was packed", e.src)
	}
	return nil
}

func hashFile(path string) (sum []byte, crc uint32, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	h, c := sha256.New(), crc32.NewIEEE()
	size, err = io.Copy(io.MultiWriter(h, c), f)
	if err != nil {
		return nil, 0, 0, err
	}
	return h.Sum(nil), c.Sum32(), size, nil
}

func storeBytes(zw *zip.Writer, name string, b []byte, mod time.Time) error {
	fh := &zip.FileHeader{Name: name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(b),
		CompressedSize64: uint64(len(b)), UncompressedSize64: uint64(len(b))}
	setModTime(fh, mod)
	w, err := zw.CreateRaw(fh)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// setModTime sets an entry's MS-DOS date and time: CreateRaw writes the
// header as given, without converting Modified as CreateHeader does.
func setModTime(fh *zip.FileHeader, t time.Time) {
	t = t.UTC()
	if t.Year() < 1980 {
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	//lint:ignore SA1019 CreateRaw reads these fields, not Modified
	fh.ModifiedDate = uint16((t.Year()-1980)<<9 | int(t.Month())<<5 | t.Day())
	//lint:ignore SA1019 as above
	fh.ModifiedTime = uint16(t.Hour()<<11 | t.Minute()<<5 | t.Second()/2)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
