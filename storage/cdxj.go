package storage

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CDXJEntry is one line of a CDXJ index: where a response or revisit
// record is, as pywb and ReplayWeb.page (wabac.js) read it. Its line is
//
//	KEY TIMESTAMP {"url":…,"mime":…,"status":"200","digest":…,"length":"1234","offset":"0","filename":…}
//
// with the fields of pywb's cdxj-indexer and py-wacz, numbers written as
// strings as they write them (ParseCDXJLine reads warcio.js's JSON
// numbers too).
type CDXJEntry struct {
	Key       string // SURT(URL)
	Timestamp string // the record's WARC-Date, UTC, YYYYMMDDhhmmss
	URL       string
	// Mime is the response's media type without parameters ("unk" when it
	// has none), or "warc/revisit" for a revisit record.
	Mime string
	// Status is the final response's status code; 0 (left out) when
	// its status line does not parse.
	Status int
	// Digest is the WARC-Payload-Digest without its "sha1:" prefix, as
	// pywb and warcio.js write it (another algorithm keeps its prefix).
	Digest   string
	Length   int64  // bytes of the record's gzip member
	Offset   int64  // where that member starts in the file
	Filename string // the WARC file's base name
}

// cdxjJSON is the JSON block of a CDXJ line as AppendLine writes it.
type cdxjJSON struct {
	URL      string `json:"url"`
	Mime     string `json:"mime"`
	Status   string `json:"status,omitempty"`
	Digest   string `json:"digest,omitempty"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
}

// ErrCDXJ means a CDXJ line does not parse.
var ErrCDXJ = errors.New("storage: malformed CDXJ line")

// AppendLine appends e's line, with its newline, to dst.
func (e *CDXJEntry) AppendLine(dst []byte) []byte {
	dst = append(dst, e.Key...)
	dst = append(dst, ' ')
	dst = append(dst, e.Timestamp...)
	dst = append(dst, ' ')
	// Numbers as strings, as pywb's indexer and py-wacz write them: pywb
	// keeps a field's JSON type and compares the status as a string;
	// wabac.js reads either.
	var status string
	if e.Status != 0 {
		status = strconv.Itoa(e.Status)
	}
	j := cdxjJSON{URL: e.URL, Mime: e.Mime, Status: status, Digest: e.Digest,
		Length: strconv.FormatInt(e.Length, 10), Offset: strconv.FormatInt(e.Offset, 10), Filename: e.Filename}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		// Strings and integers always encode.
		panic("storage: CDXJ entry does not encode: " + err.Error())
	}
	return append(dst, b.Bytes()...) // Encode ends it with "\n"
}

// ParseCDXJLine parses one line (without or with its line end) of a CDXJ
// index. The error matches ErrCDXJ.
func ParseCDXJLine(line []byte) (CDXJEntry, error) {
	line = bytes.TrimRight(line, "\r\n")
	key, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(key) == 0 {
		return CDXJEntry{}, fmt.Errorf("%w: no key: %.80q", ErrCDXJ, line)
	}
	ts, js, ok := bytes.Cut(rest, []byte(" "))
	if !ok || !isTimestamp14(ts) {
		return CDXJEntry{}, fmt.Errorf("%w: no 14-digit timestamp after the key: %.80q", ErrCDXJ, line)
	}
	// pywb writes the numbers as strings ("status": "200", "-" for
	// none), warcio.js as numbers: both are read.
	var aux struct {
		URL      string  `json:"url"`
		Mime     string  `json:"mime"`
		Status   flexInt `json:"status"`
		Digest   string  `json:"digest"`
		Length   flexInt `json:"length"`
		Offset   flexInt `json:"offset"`
		Filename string  `json:"filename"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	if err := dec.Decode(&aux); err != nil {
		return CDXJEntry{}, fmt.Errorf("%w: %v: %.80q", ErrCDXJ, err, line)
	}
	if dec.More() {
		return CDXJEntry{}, fmt.Errorf("%w: data after the JSON object: %.80q", ErrCDXJ, line)
	}
	if aux.Offset < 0 || aux.Length < 0 || aux.Status < 0 || aux.Status > 999 {
		return CDXJEntry{}, fmt.Errorf("%w: offset, length or status out of range: %.80q", ErrCDXJ, line)
	}
	return CDXJEntry{
		Key: string(key), Timestamp: string(ts),
		URL: aux.URL, Mime: aux.Mime, Status: int(aux.Status), Digest: aux.Digest,
		Length: int64(aux.Length), Offset: int64(aux.Offset), Filename: aux.Filename,
	}, nil
}

// flexInt is an integer written as a JSON number or a string of one; the
// string "-" or "" is 0.
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "-" || s == "" {
			*n = 0
			return nil
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer: %.20q", s)
	}
	*n = flexInt(v)
	return nil
}

func isTimestamp14(b []byte) bool {
	if len(b) != 14 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// cdxjEntry returns the index entry of rec, read from the file named
// filename, and whether it has one: response and revisit records only.
func cdxjEntry(rec *WARCRecord, filename string) (CDXJEntry, bool, error) {
	typ := rec.Header.Get("WARC-Type")
	if typ != "response" && typ != "revisit" {
		return CDXJEntry{}, false, nil
	}
	e := CDXJEntry{Length: rec.Length, Offset: rec.Offset, Filename: filename}
	if rec.Length == 0 {
		e.URL = trimAngle(rec.Header.Get("WARC-Target-URI"))
		return e, false, fmt.Errorf("%w: %s: record at offset %d shares its gzip member with the one before it: no offset and length address it alone",
			ErrCorrupt, filename, rec.Offset)
	}
	date, err := time.Parse(time.RFC3339Nano, rec.Header.Get("WARC-Date"))
	if err != nil {
		e.URL = trimAngle(rec.Header.Get("WARC-Target-URI"))
		return e, false, fmt.Errorf("%w: %s: record at offset %d: WARC-Date %q", ErrCorrupt, filename, rec.Offset, rec.Header.Get("WARC-Date"))
	}
	var block []byte
	if strings.HasPrefix(strings.ToLower(rec.Header.Get("Content-Type")), "application/http") {
		block = rec.Block
	}
	e.fill(typ, rec.Header.Get("WARC-Target-URI"), date, rec.Header.Get("WARC-Payload-Digest"), block)
	return e, true, nil
}

// fill sets e's fields from a response or revisit record's (typ's)
// WARC-Target-URI, WARC-Date, WARC-Payload-Digest and block (nil when
// its Content-Type is not application/http): what IndexWARCs reads back
// and what WARCWriter writes to a sidecar (WARCOptions.IndexDir) are
// computed here, so the two lines cannot differ.
func (e *CDXJEntry) fill(typ, uri string, date time.Time, digest string, block []byte) {
	e.URL = trimAngle(uri)
	e.Timestamp = date.UTC().Format("20060102150405")
	e.Key = SURT(e.URL)
	if len(digest) > 5 && strings.EqualFold(digest[:5], "sha1:") {
		digest = digest[5:]
	}
	e.Digest = digest
	e.Status, e.Mime = 0, ""
	if block != nil {
		e.Status, e.Mime = statusMime(block)
	}
	if e.Mime == "" {
		e.Mime = "unk"
	}
	if typ == "revisit" {
		e.Mime = "warc/revisit"
	}
}

func trimAngle(uri string) string {
	return strings.TrimSuffix(strings.TrimPrefix(uri, "<"), ">")
}

// statusMime returns the status code and media type of the final
// response (after 1xx interim ones) in an HTTP response block, as
// parseResponse finds it: from the heads alone, so that a writer can ask
// it of the block's head without its body (see headsEnd).
func statusMime(block []byte) (int, string) {
	pos, h := finalHead(block)
	end := len(block)
	if h.end >= 0 {
		end = pos + h.end
	}
	return max(h.status, 0), mediaType(headerValue(block[pos:end], "Content-Type"))
}

// headerValue returns the value of the first field called name in an HTTP
// head, or "".
func headerValue(head []byte, name string) string {
	for line := range bytes.Lines(head) {
		n, v, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(n), name) {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}

// mediaType is a Content-Type's type/subtype, lowercased, without
// parameters; "" for none.
func mediaType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	if strings.ContainsAny(t, " \t\"") {
		return ""
	}
	return t
}

// IndexOptions configures IndexWARCs. The zero value is valid.
type IndexOptions struct {
	// MemoryLimit is the size in bytes of index lines held in memory:
	// past it they are sorted and written to a temporary run file, and
	// the runs are merged at the end, so that a crawl of millions of
	// records is indexed in bounded memory. Default 64 MiB.
	MemoryLimit int64
	// TempDir holds the run files while IndexWARCs runs. Default
	// os.TempDir().
	TempDir string
	// Visit, if set, is called with every record indexed and its entry,
	// in file order; its error stops the indexing. With Visit set every
	// file is read (SidecarDir is not used).
	Visit func(rec *WARCRecord, e *CDXJEntry) error
	// SidecarDir, when set, is where WARCWriter wrote sidecar indexes
	// (WARCOptions.IndexDir): a file whose sidecar there is complete (its
	// trailer records the file's size on disk, its checksum and lines
	// check) is indexed from it, the same lines, without reading the file;
	// any other is read. Default "": every file is read.
	SidecarDir string
}

// IndexStats says what IndexWARCs read and wrote.
type IndexStats struct {
	Files   int   // WARC files indexed
	Records int64 // index lines written
	// Sidecars is how many of Files were indexed from their sidecar
	// index (IndexOptions.SidecarDir) rather than read.
	Sidecars int
	Runs     int // sorted runs spilled to disk (0: sorted in memory)
	// Torn names the files that end inside a record (a crawl's crash):
	// their whole records are indexed, the torn one is not.
	Torn []string
}

// IndexWARCs writes to w the CDXJ index of the response and revisit
// records of files (WARC files, gzip-compressed one record per member or
// uncompressed), sorted by key then timestamp (byte order of the lines, as
// pywb's binary search reads them). A file that does not parse fails with
// an error naming it; one that ends inside a record (a crash) is indexed up
// to it and listed in IndexStats.Torn.
func IndexWARCs(ctx context.Context, w io.Writer, files []string, opts IndexOptions) (IndexStats, error) {
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = 64 << 20
	}
	s := &sorter{limit: opts.MemoryLimit, dir: opts.TempDir}
	defer s.cleanup()
	var st IndexStats
	for _, path := range files {
		if opts.SidecarDir != "" && opts.Visit == nil {
			if ok, err := indexSidecar(opts.SidecarDir, path, s); err != nil {
				return st, err
			} else if ok {
				st.Files++
				st.Sidecars++
				continue
			}
		}
		torn, err := indexFile(ctx, path, s, opts.Visit)
		if err != nil {
			return st, err
		}
		st.Files++
		if torn {
			st.Torn = append(st.Torn, path)
		}
	}
	n, err := s.finish(ctx, w)
	st.Records, st.Runs = n, len(s.runs)
	return st, err
}

func indexFile(ctx context.Context, path string, s *sorter, visit func(*WARCRecord, *CDXJEntry) error) (torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("storage: index: %w", err)
	}
	defer f.Close()
	name := filepath.Base(path)
	r := NewWARCReader(f)
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if errors.Is(err, ErrTruncated) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("storage: index %s: %w", path, err)
		}
		e, ok, err := cdxjEntry(rec, name)
		if err != nil {
			return false, fmt.Errorf("storage: index %s: %w", path, err)
		}
		if !ok {
			continue
		}
		if visit != nil {
			if err := visit(rec, &e); err != nil {
				return false, err
			}
		}
		s.scratch = e.AppendLine(s.scratch[:0])
		if err := s.add(s.scratch); err != nil {
			return false, err
		}
	}
}

// sorter sorts lines in memory up to limit bytes, then in runs on disk
// merged at the end. Lines are copied into chunks of sorterChunk bytes
// (or limit/16, if smaller), so that the memory they hold is what limit
// counts, without an allocation per line.
type sorter struct {
	limit   int64
	dir     string
	lines   [][]byte // into chunks
	chunks  [][]byte
	size    int64 // bytes of chunks and of the lines' slice headers
	runs    []string
	scratch []byte // the line being built
}

const sorterChunk = 1 << 20

func (s *sorter) add(line []byte) error {
	var c []byte
	if n := len(s.chunks); n > 0 && cap(s.chunks[n-1])-len(s.chunks[n-1]) >= len(line) {
		c = s.chunks[n-1]
	} else {
		c = make([]byte, 0, max(min(sorterChunk, int(s.limit/16)), len(line)))
		s.chunks = append(s.chunks, c)
		s.size += int64(cap(c))
	}
	start := len(c)
	c = append(c, line...)
	s.chunks[len(s.chunks)-1] = c
	s.lines = append(s.lines, c[start:len(c):len(c)])
	s.size += 24
	if s.size >= s.limit {
		return s.spill()
	}
	return nil
}

func (s *sorter) sortLines() { slices.SortFunc(s.lines, bytes.Compare) }

// spill writes the lines in memory, sorted, to a new run file.
func (s *sorter) spill() error {
	s.sortLines()
	f, err := os.CreateTemp(s.dir, "cdxj-run-*")
	if err != nil {
		return fmt.Errorf("storage: index run: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	bw := bufio.NewWriterSize(f, 1<<20)
	for _, l := range s.lines {
		bw.Write(l)
	}
	err = bw.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: index run: %w", err)
	}
	// The slice headers would keep the spilled chunks alive until
	// overwritten: drop them.
	clear(s.lines)
	s.lines, s.chunks, s.size = s.lines[:0], nil, 0
	return nil
}

// finish writes every line, in order, to w and returns how many.
func (s *sorter) finish(ctx context.Context, w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	if len(s.runs) == 0 {
		s.sortLines()
		for _, l := range s.lines {
			if _, err := bw.Write(l); err != nil {
				return 0, err
			}
		}
		return int64(len(s.lines)), bw.Flush()
	}
	if len(s.lines) > 0 {
		if err := s.spill(); err != nil {
			return 0, err
		}
	}
	h := make(runHeap, 0, len(s.runs))
	for _, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			return 0, fmt.Errorf("storage: index run: %w", err)
		}
		defer f.Close()
		rr := &runReader{r: bufio.NewReaderSize(f, 256<<10)}
		if ok, err := rr.next(); err != nil {
			return 0, err
		} else if ok {
			h = append(h, rr)
		}
	}
	heap.Init(&h)
	var n int64
	for len(h) > 0 {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		top := h[0]
		if _, err := bw.Write(top.line); err != nil {
			return n, err
		}
		n++
		ok, err := top.next()
		if err != nil {
			return n, err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return n, bw.Flush()
}

func (s *sorter) cleanup() {
	for _, name := range s.runs {
		os.Remove(name)
	}
}

type runReader struct {
	r    *bufio.Reader
	line []byte
}

func (r *runReader) next() (bool, error) {
	line, err := r.r.ReadBytes('\n')
	if errors.Is(err, io.EOF) && len(line) == 0 {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storage: index run: %w", err)
	}
	r.line = line
	return true, nil
}

type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return bytes.Compare(h[i].line, h[j].line) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ErrNotCrawlDir means a directory given as a crawl's output is not one.
var ErrNotCrawlDir = errors.New("storage: not a crawl output directory")

// CrawlWARCFiles returns the WARC files of a crawl's output directory dir
// (dir/warc/*.warc.gz and *.warc), in name order, which is the order they
// were written in. A dir without a warc/ directory fails with
// ErrNotCrawlDir.
func CrawlWARCFiles(dir string) ([]string, error) {
	wd := filepath.Join(dir, "warc")
	ents, err := os.ReadDir(wd)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no warc/ directory", ErrNotCrawlDir, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	var files []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && (strings.HasSuffix(n, ".warc.gz") || strings.HasSuffix(n, ".warc")) {
			files = append(files, filepath.Join(wd, n))
		}
	}
	return files, nil
}

// CrawlIndexPath is where WriteCrawlIndex puts a crawl's index, relative
// to its output directory.
const CrawlIndexPath = "indexes/index.cdxj"

// WriteCrawlIndex writes the CDXJ index of the WARC files of the crawl
// output directory dir to dir/indexes/index.cdxj, replacing it atomically
// (WriteFileAtomic): an error leaves the previous index, or none, in
// place. Run files go to dir/indexes too. A WARC file with a complete
// sidecar index in dir/indexes/perwarc (CrawlSidecarDir, written by the
// crawl's WARC writer) is indexed from it instead of being read.
func WriteCrawlIndex(ctx context.Context, dir string) (IndexStats, error) {
	files, err := CrawlWARCFiles(dir)
	if err != nil {
		return IndexStats{}, err
	}
	out := filepath.Join(dir, CrawlIndexPath)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return IndexStats{}, fmt.Errorf("storage: index: %w", err)
	}
	var st IndexStats
	err = WriteFileAtomic(out, func(w io.Writer) error {
		var err error
		st, err = IndexWARCs(ctx, w, files, IndexOptions{TempDir: filepath.Dir(out), SidecarDir: filepath.Join(dir, CrawlSidecarDir)})
		return err
	})
	return st, err
}
