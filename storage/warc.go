package storage

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// WARC errors, matched with errors.Is.
var (
	// ErrInvalidExchange means an Exchange cannot be written as it is (a
	// missing target URI or head, a header value with a line break).
	ErrInvalidExchange = errors.New("storage: invalid exchange for WARC")
	// ErrTruncated means a WARC file ends inside a record: the file was
	// being written when its writer crashed.
	ErrTruncated = errors.New("storage: WARC record truncated")
)

// WARCOptions configures NewWARCWriter. The zero value is valid.
type WARCOptions struct {
	// Prefix starts every file name: <Prefix>-<UTC timestamp>-<serial>.warc.gz.
	// Default "layercrawl".
	Prefix string
	// MaxFileSize is the size in bytes beyond which the writer starts a
	// new file. A file is rotated before a record pair that would make it
	// exceed MaxFileSize, so files stay below it unless one pair is larger
	// by itself. Default 1 GiB.
	MaxFileSize int64
	// Software is the warcinfo "software" field. Default "layercrawl".
	Software string
	// Info holds extra warcinfo fields (for example "operator",
	// "isPartOf", "http-header-user-agent", "robots"), written in name
	// order. Default none.
	Info map[string]string
	// GzipLevel is the compression level of every record's gzip member,
	// gzip.HuffmanOnly to gzip.BestCompression. Default
	// gzip.DefaultCompression. At gzip.BestSpeed a record of up to 6 KiB
	// is written as one deflate block with the fixed Huffman codes: about
	// a fifth of the CPU of a dynamic table on the small records of a
	// crawl, for output about 11% larger (docs/BENCHMARKS.md). At any
	// level, a response whose payload is compressed by its format (PNG,
	// JPEG, WebP, fonts, archives, most audio and video) or its
	// Content-Encoding is written in stored blocks: deflate gains nothing
	// on it and would cost as much CPU as on text.
	GzipLevel int
	// IndexDir, when set, is a directory (created if needed) where the
	// writer puts, for every WARC file, a sidecar index
	// IndexDir/<file name>.cdxj: the CDXJ line IndexWARCs would write for
	// each response and revisit record, as it writes the record, and,
	// when the file is closed, a trailer with the file's final size.
	// IndexWARCs given it as IndexOptions.SidecarDir reads a complete
	// sidecar instead of the WARC file (see CrawlSidecarDir). A sidecar
	// that cannot be written is removed, never an error of Write: the
	// index then reads that WARC file. Default "": none.
	IndexDir string

	now func() time.Time // tests; default time.Now
}

// EnsureDefaults fills zero fields with their documented defaults.
func (o *WARCOptions) EnsureDefaults() {
	if o.Prefix == "" {
		o.Prefix = "layercrawl"
	}
	if o.MaxFileSize == 0 {
		o.MaxFileSize = 1 << 30
	}
	if o.Software == "" {
		o.Software = "layercrawl"
	}
	if o.GzipLevel == 0 {
		o.GzipLevel = gzip.DefaultCompression
	}
	if o.now == nil {
		o.now = time.Now
	}
}

// Validate reports options that cannot work.
func (o *WARCOptions) Validate() error {
	if strings.ContainsAny(o.Prefix, `/\`) || strings.HasPrefix(o.Prefix, ".") {
		return fmt.Errorf("storage: WARC prefix %q must be a plain file name start", o.Prefix)
	}
	if o.MaxFileSize < 0 {
		return fmt.Errorf("storage: negative WARC MaxFileSize %d", o.MaxFileSize)
	}
	if o.GzipLevel != 0 && (o.GzipLevel < gzip.HuffmanOnly || o.GzipLevel > gzip.BestCompression) {
		return fmt.Errorf("storage: WARC GzipLevel %d out of range", o.GzipLevel)
	}
	for k, v := range o.Info {
		if !isToken(k) || strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("storage: bad warcinfo field %q: %q", k, v)
		}
	}
	return nil
}

// Exchange is one HTTP request and its response, as the crawler saw them.
type Exchange struct {
	// TargetURI is the URL fetched. Required.
	TargetURI string
	// IP is the address connected to; empty when unknown.
	IP string
	// Date is when the fetch started; zero means now.
	Date time.Time
	// RequestHead is the request line and header fields as written to
	// the connection, ending with the blank line: the request record's
	// block is RequestHead followed by RequestBody, byte for byte.
	// Required.
	RequestHead []byte
	// RequestBody is the request's body as written; usually empty.
	RequestBody []byte
	// Response is the response as read from the connection: any 1xx
	// interim responses, the status line, the header fields in their
	// order, case and repetition, and the message body with its transfer
	// coding and content coding. When set, the response record's block
	// is exactly these bytes, and ResponseHead and Body are ignored.
	Response []byte
	// ResponseHead and Body are the form for a response that was not
	// captured from a connection (built by a program, or converted from
	// another format): the status line and header fields, as from
	// ResponseHead, and the entity body as stored. The block is
	// ResponseHead, normalised to end in one blank line, then Body. One
	// of Response and ResponseHead is required.
	ResponseHead []byte
	Body         []byte
	// Truncated says why the response is incomplete, as a WARC-Truncated
	// value: "length", "time", "disconnect" or "unspecified". Empty when
	// whole. With Response set and Truncated empty, a response whose
	// bytes end before its framing does (see ParseResponse) is written
	// with "unspecified": a record never claims to be whole when it is
	// not.
	Truncated string
	// Metadata, when not empty, is written as a third record, of type
	// metadata, concurrent to the response: application/warc-fields
	// lines ("name: value" and CRLF), as MetadataFields builds them.
	Metadata []byte
	// PayloadDigest, when not empty, must be ResponsePayloadDigest(Response)
	// (or PayloadDigest(Body) for the ResponseHead form): a caller that
	// computed it already (to look the payload up for a revisit) saves
	// the writer a pass of SHA-1 over the body. Empty means the writer
	// computes it.
	PayloadDigest string
	// ResponseID, when not empty, is the WARC-Record-ID of the response
	// (or revisit) record, as from NewRecordID: a caller that records the
	// response in a revisit index before writing it can name it there.
	// Empty means the writer makes one.
	ResponseID string
}

// maxPooledRecord is the largest compressed pair whose buffer is kept for
// reuse; larger ones (big bodies are rare) are left to the garbage collector.
const maxPooledRecord = 4 << 20

// WARCRef says where Write put an exchange.
type WARCRef struct {
	File       string // base name of the WARC file
	Offset     int64  // offset of the request record's gzip member
	Length     int64  // compressed length of its records (request, response and any metadata)
	RequestID  string // WARC-Record-ID of the request record
	ResponseID string // WARC-Record-ID of the response record (of the revisit record, from WriteRevisit)
	// ResponseOffset is the offset of the response (or revisit) record's
	// gzip member, which follows the request's: where a reader of one
	// record (a capture history, an index) seeks to.
	ResponseOffset int64
	// ResponseLength is the length of the response (or revisit) record's
	// gzip member: with ResponseOffset, what its index line says.
	ResponseLength int64
	MetadataID     string // WARC-Record-ID of the metadata record; empty if none
}

// WARCWriter writes WARC 1.1 files: a warcinfo record at the start of every
// file, then a request and a response record per Exchange, each record in
// its own gzip member. It is safe for concurrent use; records are
// compressed by the calling goroutine and appended under a lock, with one
// write call per exchange.
//
// Crash behaviour: a record pair is appended with a single write, and a
// failed write is cut off again, so the file only ever grows by whole pairs.
// A crash of the process or machine during that write can leave at most the
// last pair incomplete; WARCReader reports it as ErrTruncated after every
// whole record. A new writer never appends to an existing file: it starts a
// new one with the next serial number.
type WARCWriter struct {
	dir  string
	opts WARCOptions
	pool sync.Pool // of *recordBuilder

	mu      sync.Mutex // protects the fields below
	f       *os.File
	name    string
	size    int64
	infoEnd int64 // size of the current file's warcinfo: a file is never rotated with nothing else in it
	wb      writeback
	serial  int
	side    *sidecar // the current file's sidecar index; nil if none
	line    []byte   // scratch for side's lines
	closed  bool
	err     error // sticky: the file could not be restored after a failed write
	// syncs counts the fsyncs of f running outside mu (Sync); the file
	// is closed only once they are done. Added to under mu only.
	syncs sync.WaitGroup
}

// NewWARCWriter returns a writer of WARC files in dir, creating dir if
// needed. The first file is created by the first Write.
func NewWARCWriter(dir string, opts WARCOptions) (*WARCWriter, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.EnsureDefaults()
	info := make(map[string]string, len(opts.Info))
	for k, v := range opts.Info {
		info[k] = v
	}
	opts.Info = info
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: WARC dir: %w", err)
	}
	if opts.IndexDir != "" {
		if err := os.MkdirAll(opts.IndexDir, 0o755); err != nil {
			return nil, fmt.Errorf("storage: WARC index dir: %w", err)
		}
	}
	serial, err := lastSerial(dir, opts.Prefix)
	if err != nil {
		return nil, err
	}
	return &WARCWriter{dir: dir, opts: opts, serial: serial}, nil
}

// lastSerial returns the highest serial among dir's WARC files of prefix.
func lastSerial(dir, prefix string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("storage: WARC dir: %w", err)
	}
	max := 0
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".warc.gz")
		if !ok || !strings.HasPrefix(name, prefix+"-") {
			continue
		}
		i := strings.LastIndexByte(name, '-')
		if n, err := strconv.Atoi(name[i+1:]); err == nil && n > max {
			max = n
		}
	}
	return max, nil
}

// Write appends ex as a request record and a response record that name each
// other in WARC-Concurrent-To, then, when ex.Metadata is set, a metadata
// record concurrent to the response. It returns where they went.
func (w *WARCWriter) Write(ex *Exchange) (WARCRef, error) {
	return w.write(ex, nil)
}

// write appends ex's request record and its response record, or, when of
// is set, a revisit record in place of the response (see WriteRevisit).
func (w *WARCWriter) write(ex *Exchange, of *Revisit) (WARCRef, error) {
	if err := ex.validate(); err != nil {
		return WARCRef{}, err
	}
	if err := of.validate(); err != nil {
		return WARCRef{}, err
	}
	date := ex.Date
	if date.IsZero() {
		date = w.opts.now()
	}
	reqID, err := newRecordID()
	if err != nil {
		return WARCRef{}, err
	}
	respID := ex.ResponseID
	if respID == "" {
		if respID, err = newRecordID(); err != nil {
			return WARCRef{}, err
		}
	}
	b, _ := w.pool.Get().(*recordBuilder)
	if b == nil {
		b = &recordBuilder{}
	}
	defer func() {
		b.blockA, b.blockC = nil, nil // the caller's bytes
		if cap(b.out.b) <= maxPooledRecord {
			w.pool.Put(b)
		}
	}()
	b.out.b = b.out.b[:0]
	common := []warcField{{"WARC-Target-URI", ex.TargetURI}}
	if ex.IP != "" {
		common = append(common, warcField{"WARC-IP-Address", ex.IP})
	}
	fields := append(slices.Clip(common), warcField{"WARC-Concurrent-To", respID})
	// The request's block is the bytes written; its payload is the
	// request body (a GET has none). A head built by hand without its
	// blank line is given one.
	reqHead := ex.RequestHead
	if !bytes.HasSuffix(reqHead, []byte("\r\n\r\n")) && !bytes.HasSuffix(reqHead, []byte("\n\n")) {
		reqHead = append(slices.Clip(bytes.TrimRight(reqHead, "\r\n")), "\r\n\r\n"...)
	}
	if err := b.recordBlock("request", reqID, date, fields, "application/http;msgtype=request",
		reqHead, ex.RequestBody, PayloadDigest(ex.RequestBody), w.opts.GzipLevel); err != nil {
		return WARCRef{}, err
	}
	reqLen := int64(len(b.out.b))
	fields = append(slices.Clip(common), warcField{"WARC-Concurrent-To", reqID})
	if len(ex.Response) > 0 {
		err = b.rawResponse(ex, of, respID, date, fields, w.opts.GzipLevel)
	} else {
		if ex.Truncated != "" {
			fields = append(fields, warcField{"WARC-Truncated", ex.Truncated})
		}
		if of == nil {
			err = b.recordDigest("response", respID, date, fields, "application/http;msgtype=response",
				ex.ResponseHead, ex.Body, ex.PayloadDigest, w.opts.GzipLevel)
		} else {
			digest := ex.PayloadDigest
			if digest == "" {
				digest = PayloadDigest(ex.Body)
			}
			err = b.recordDigest("revisit", respID, date, of.fields(fields), "application/http;msgtype=response",
				ex.ResponseHead, nil, digest, w.opts.GzipLevel)
		}
	}
	if err != nil {
		return WARCRef{}, err
	}
	respLen := int64(len(b.out.b)) - reqLen
	var entry CDXJEntry
	entryOK := false
	if w.opts.IndexDir != "" {
		typ := "response"
		if of != nil {
			typ = "revisit"
		}
		entry, entryOK = sidecarEntry(typ, ex.TargetURI, date, b.digest, b.blockA, b.blockC, len(b.head), respLen)
	}
	var metaID string
	if len(ex.Metadata) > 0 {
		if metaID, err = newRecordID(); err != nil {
			return WARCRef{}, err
		}
		fields = []warcField{{"WARC-Target-URI", ex.TargetURI}, {"WARC-Concurrent-To", respID}}
		if err := b.record("metadata", metaID, date, fields, "application/warc-fields",
			nil, ex.Metadata, w.opts.GzipLevel); err != nil {
			return WARCRef{}, err
		}
	}

	w.mu.Lock()
	off, err := w.appendLocked(b.out.b)
	if err != nil {
		w.mu.Unlock()
		return WARCRef{}, err
	}
	ref := WARCRef{File: w.name, Offset: off, Length: int64(len(b.out.b)), RequestID: reqID, ResponseID: respID,
		ResponseOffset: off + reqLen, ResponseLength: respLen, MetadataID: metaID}
	if w.side != nil {
		if entryOK {
			entry.Offset, entry.Filename = ref.ResponseOffset, w.name
			w.line = entry.AppendLine(w.line[:0])
			if !w.side.add(w.line) {
				w.side = nil
			}
		} else {
			w.side.abandon()
			w.side = nil
		}
	}
	// The writeback is started outside mu, like Sync's fsync (the call
	// queues the pages' writes, 0.4 ms at the median here); a rotation
	// meanwhile closes the file after it.
	f := w.f
	wbOff, wbN := w.wb.wrote(w.size)
	if wbN > 0 {
		w.syncs.Add(1)
	}
	w.mu.Unlock()
	if wbN > 0 {
		_ = startWriteback(f, wbOff, wbN) // a hint: see startWriteback
		w.syncs.Done()
	}
	return ref, nil
}

// appendLocked writes p to the current file, rotating first when needed,
// and returns the offset p was written at.
func (w *WARCWriter) appendLocked(p []byte) (int64, error) {
	if w.closed {
		return 0, ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.f != nil && w.size+int64(len(p)) > w.opts.MaxFileSize && w.size > w.infoEnd {
		if err := w.closeFileLocked(); err != nil {
			return 0, err
		}
	}
	if w.f == nil {
		if err := w.openFileLocked(); err != nil {
			return 0, err
		}
	}
	off := w.size
	if err := w.writeLocked(p); err != nil {
		return 0, err
	}
	return off, nil
}

func (w *WARCWriter) writeLocked(p []byte) error {
	n, err := w.f.Write(p)
	if err == nil {
		w.size += int64(n)
		return nil
	}
	// Cut the partial write off so that the next record does not follow
	// garbage; if even that fails, refuse further writes to this writer.
	if terr := w.f.Truncate(w.size); terr != nil {
		w.err = fmt.Errorf("storage: WARC %s: write failed (%v) and could not be undone: %w", w.name, err, terr)
		return w.err
	}
	if _, serr := w.f.Seek(w.size, 0); serr != nil {
		w.err = fmt.Errorf("storage: WARC %s: %w", w.name, serr)
	}
	return fmt.Errorf("storage: WARC %s: %w", w.name, err)
}

func (w *WARCWriter) openFileLocked() error {
	now := w.opts.now().UTC()
	for range 100 {
		w.serial++
		name := fmt.Sprintf("%s-%s-%05d.warc.gz", w.opts.Prefix, now.Format("20060102150405")+fmt.Sprintf("%03d", now.Nanosecond()/1e6), w.serial)
		f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue // another writer took this serial
		}
		if err != nil {
			return fmt.Errorf("storage: WARC: %w", err)
		}
		w.f, w.name, w.size, w.wb = f, name, 0, writeback{}
		if w.opts.IndexDir != "" {
			w.side = createSidecar(filepath.Join(w.opts.IndexDir, name+sidecarExt))
		}
		info, err := w.warcinfo(name, now)
		if err == nil {
			err = w.writeLocked(info)
		}
		w.infoEnd = w.size
		if err != nil {
			f.Close()
			os.Remove(filepath.Join(w.dir, name))
			if w.side != nil {
				w.side.abandon()
			}
			w.f, w.name, w.side = nil, "", nil
			return err
		}
		return nil
	}
	return fmt.Errorf("storage: WARC: no free file name in %s", w.dir)
}

func (w *WARCWriter) warcinfo(name string, date time.Time) ([]byte, error) {
	var block bytes.Buffer
	fmt.Fprintf(&block, "software: %s\r\n", w.opts.Software)
	block.WriteString("format: WARC File Format 1.1\r\n")
	block.WriteString("conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n")
	keys := make([]string, 0, len(w.opts.Info))
	for k := range w.opts.Info {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&block, "%s: %s\r\n", k, w.opts.Info[k])
	}
	id, err := newRecordID()
	if err != nil {
		return nil, err
	}
	var b recordBuilder
	if err := b.record("warcinfo", id, date, []warcField{{"WARC-Filename", name}},
		"application/warc-fields", nil, block.Bytes(), w.opts.GzipLevel); err != nil {
		return nil, err
	}
	return b.out.b, nil
}

func (w *WARCWriter) closeFileLocked() error {
	f, name, size, side := w.f, w.name, w.size, w.side
	w.f, w.name, w.size, w.side = nil, "", 0, nil
	w.syncs.Wait() // a Sync of f under way, outside mu
	if err := f.Sync(); err != nil {
		f.Close()
		if side != nil {
			side.abandon()
		}
		return fmt.Errorf("storage: WARC %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		if side != nil {
			side.abandon()
		}
		return fmt.Errorf("storage: WARC %s: %w", name, err)
	}
	// After the WARC file is durable: a trailer never describes a file
	// the disk may not hold.
	if side != nil {
		side.finish(size)
	}
	return syncDir(w.dir)
}

// Sync makes what was written so far durable (fsync of the current file
// and of the directory). Writes go on while it waits for the disk: the
// fsync runs outside the writer's lock (a checkpoint's fsync of the WARC
// written in 30 s, hundreds of MB, held every worker's next record for
// its whole length), and a file rotated meanwhile is closed after it.
func (w *WARCWriter) Sync() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	f, name := w.f, w.name
	if f == nil {
		w.mu.Unlock()
		return nil
	}
	if w.side != nil && !w.side.flush() {
		w.side = nil
	}
	w.syncs.Add(1)
	w.mu.Unlock()
	err := f.Sync()
	w.syncs.Done()
	if err != nil {
		return fmt.Errorf("storage: WARC %s: %w", name, err)
	}
	return syncDir(w.dir)
}

// Close syncs and closes the current file. Calls after Close return
// ErrClosed.
func (w *WARCWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	if w.f == nil {
		return nil
	}
	return w.closeFileLocked()
}

func (ex *Exchange) validate() error {
	switch {
	case ex.TargetURI == "":
		return fmt.Errorf("%w: empty target URI", ErrInvalidExchange)
	case strings.ContainsAny(ex.TargetURI, "\r\n \t"):
		return fmt.Errorf("%w: target URI %q contains white space", ErrInvalidExchange, ex.TargetURI)
	case strings.ContainsAny(ex.IP, "\r\n \t"):
		return fmt.Errorf("%w: IP %q contains white space", ErrInvalidExchange, ex.IP)
	case len(bytes.TrimSpace(ex.RequestHead)) == 0:
		return fmt.Errorf("%w: empty request head", ErrInvalidExchange)
	case len(ex.Response) == 0 && len(bytes.TrimSpace(ex.ResponseHead)) == 0:
		return fmt.Errorf("%w: no response", ErrInvalidExchange)
	case strings.ContainsAny(ex.PayloadDigest, "\r\n \t"):
		// A line break would end the WARC header early: the file would
		// not read back.
		return fmt.Errorf("%w: payload digest %q contains white space", ErrInvalidExchange, ex.PayloadDigest)
	case strings.ContainsAny(ex.ResponseID, "\r\n \t"):
		return fmt.Errorf("%w: response record id %q contains white space", ErrInvalidExchange, ex.ResponseID)
	}
	switch ex.Truncated {
	case "", "length", "time", "disconnect", "unspecified":
	default:
		return fmt.Errorf("%w: WARC-Truncated %q", ErrInvalidExchange, ex.Truncated)
	}
	return nil
}

type warcField struct{ name, value string }

// recordBuilder compresses records into out; it is reused through a pool.
// At GzipLevel BestSpeed a record of up to fixedGzipRecords bytes is
// compressed by appendFixedGzip (one block with deflate's fixed codes: no
// Huffman table to build per member, the largest cost of small members);
// otherwise by klauspost/compress's gzip (standard gzip members, read by
// compress/gzip and warcio), which compresses the records of a crawl at
// about half the CPU of compress/gzip (docs/BENCHMARKS.md, "The WARC writer").
type recordBuilder struct {
	out   sink
	head  []byte   // the record's WARC header
	plain []byte   // a small record, uncompressed, for appendFixedGzip
	lz    *lzTable // appendFixedGzip's scratch
	zw    *gzip.Writer
	level int
	// The last record's block (blockA then blockC) and payload digest,
	// for its sidecar index line.
	blockA, blockC []byte
	digest         string
}

// sink is an io.Writer appending to a byte slice.
type sink struct{ b []byte }

func (s *sink) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// record appends one gzip member holding a record whose block is
// httpHead (normalised to end in one blank line) followed by payload. For
// non-HTTP blocks httpHead is nil and the block is payload alone.
func (b *recordBuilder) record(typ, id string, date time.Time, fields []warcField, contentType string, httpHead, payload []byte, level int) error {
	return b.recordDigest(typ, id, date, fields, contentType, httpHead, payload, "", level)
}

// recordDigest is record with the WARC-Payload-Digest given: a revisit
// record's block lacks the payload its digest names. An empty digest is
// computed from payload.
func (b *recordBuilder) recordDigest(typ, id string, date time.Time, fields []warcField, contentType string, httpHead, payload []byte, digest string, level int) error {
	if httpHead != nil {
		// Clip: never write into the spare capacity of the caller's slice.
		httpHead = append(slices.Clip(bytes.TrimRight(httpHead, "\r\n")), "\r\n\r\n"...)
		if digest == "" {
			digest = PayloadDigest(payload)
		}
		if level != gzip.NoCompression && precompressed(httpHead) {
			// A PNG, a video, a gzip-encoded body: deflate would spend
			// its CPU to gain nothing. Store it (still one gzip member).
			level = gzip.NoCompression
		}
	}
	return b.recordBlock(typ, id, date, fields, contentType, httpHead, payload, digest, level)
}

// rawResponse appends the response record of ex.Response, whose block is
// those bytes, or, when of is set, a revisit record whose block is the
// bytes before the payload.
func (b *recordBuilder) rawResponse(ex *Exchange, of *Revisit, id string, date time.Time, fields []warcField, level int) error {
	raw := ex.Response
	var r HTTPResponse
	digest := ex.PayloadDigest
	if digest == "" {
		r, _ = ParseResponse(raw)
		digest = r.PayloadDigest
	} else {
		r, _ = parseResponse(raw, nil)
	}
	// An unparsable response is archived all the same: its digest is
	// over what ParseResponse found.
	trunc := ex.Truncated
	if trunc == "" && r.Cut {
		trunc = "unspecified"
	}
	if trunc != "" {
		fields = append(fields, warcField{"WARC-Truncated", trunc})
	}
	if level != gzip.NoCompression && precompressed(raw[r.HeadStart:r.BodyStart]) {
		level = gzip.NoCompression
	}
	if of != nil {
		return b.recordBlock("revisit", id, date, of.fields(fields), "application/http;msgtype=response",
			raw[:r.BodyStart], nil, digest, level)
	}
	return b.recordBlock("response", id, date, fields, "application/http;msgtype=response",
		raw, nil, digest, level)
}

// recordBlock appends one gzip member holding a record whose block is a
// followed by c, with a WARC-Payload-Digest field when digest is set.
func (b *recordBuilder) recordBlock(typ, id string, date time.Time, fields []warcField, contentType string, a, c []byte, digest string, level int) error {
	httpHead, payload := a, c
	b.blockA, b.blockC, b.digest = a, c, digest
	block := sha1.New()
	block.Write(httpHead)
	block.Write(payload)
	var sum [sha1.Size]byte
	h := append(b.head[:0], "WARC/1.1\r\nWARC-Type: "...)
	h = append(h, typ...)
	h = append(h, "\r\nWARC-Record-ID: "...)
	h = append(h, id...)
	h = append(h, "\r\nWARC-Date: "...)
	h = date.UTC().AppendFormat(h, warcDateFormat)
	h = append(h, "\r\n"...)
	for _, f := range fields {
		h = append(h, f.name...)
		h = append(h, ": "...)
		h = append(h, f.value...)
		h = append(h, "\r\n"...)
	}
	h = append(h, "WARC-Block-Digest: "...)
	h = appendDigest(h, block.Sum(sum[:0]))
	h = append(h, "\r\n"...)
	if digest != "" {
		h = append(h, "WARC-Payload-Digest: "...)
		h = append(h, digest...)
		h = append(h, "\r\n"...)
	}
	h = append(h, "Content-Type: "...)
	h = append(h, contentType...)
	h = append(h, "\r\nContent-Length: "...)
	h = strconv.AppendInt(h, int64(len(httpHead)+len(payload)), 10)
	h = append(h, "\r\n\r\n"...)
	b.head = h

	const end = "\r\n\r\n"
	if level == gzip.NoCompression {
		b.out.b = appendStoredGzip(b.out.b, h, httpHead, payload, []byte(end))
		return nil
	}
	if n := len(h) + len(httpHead) + len(payload) + len(end); level == gzip.BestSpeed && n <= fixedGzipRecords {
		p := append(append(append(append(b.plain[:0], h...), httpHead...), payload...), end...)
		b.plain = p
		if b.lz == nil {
			b.lz = new(lzTable)
		}
		b.out.b = appendFixedGzip(b.out.b, p, b.lz)
		return nil
	}
	if b.zw == nil || b.level != level {
		zw, err := gzip.NewWriterLevel(&b.out, level)
		if err != nil {
			return fmt.Errorf("storage: WARC: %w", err)
		}
		b.zw, b.level = zw, level
	} else {
		b.zw.Reset(&b.out)
	}
	for _, p := range [][]byte{h, httpHead, payload, []byte(end)} {
		if _, err := b.zw.Write(p); err != nil {
			return fmt.Errorf("storage: WARC: %w", err)
		}
	}
	if err := b.zw.Close(); err != nil {
		return fmt.Errorf("storage: WARC: %w", err)
	}
	return nil
}

// warcDateFormat is WARC 1.1's WARC-Date with microseconds (the standard
// allows any fraction of a second; six digits is what other tools write).
const warcDateFormat = "2006-01-02T15:04:05.000000Z"

// PayloadDigest returns the WARC-Payload-Digest of an entity body:
// "sha1:" and the base32 SHA-1.
func PayloadDigest(body []byte) string {
	sum := sha1.Sum(body)
	return string(appendDigest(nil, sum[:]))
}

// appendDigest appends a WARC digest value, "sha1:" and the base32 of the
// SHA-1 sum, to dst.
func appendDigest(dst, sum []byte) []byte {
	return base32.StdEncoding.AppendEncode(append(dst, "sha1:"...), sum)
}

// NewRecordID returns a new WARC-Record-ID: a random (version 4) UUID URN
// in angle brackets.
func NewRecordID() (string, error) { return newRecordID() }

// newRecordID returns a random (version 4) UUID URN in angle brackets.
func newRecordID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("storage: WARC record id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return "<urn:uuid:" + string(s[:]) + ">", nil
}

// RequestHead formats the request line and header fields of a GET-style
// request for Exchange.RequestHead. proto defaults to "HTTP/1.1"; the Host
// field comes first, taken from u, then the header in name order.
func RequestHead(method string, u *url.URL, proto string, header http.Header) []byte {
	if proto == "" {
		proto = "HTTP/1.1"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\r\n", method, u.RequestURI(), proto)
	fmt.Fprintf(&b, "Host: %s\r\n", u.Host)
	h := header.Clone()
	h.Del("Host")
	writeHeader(&b, h)
	b.WriteString("\r\n")
	return b.Bytes()
}

// The response fields that ResponseHead rewrites because the stored body is
// decoded; their original values are kept under this prefix.
const origFieldPrefix = "X-Layercrawl-Orig-"

// ResponseHead formats the status line and header fields of a response
// whose body is stored as the crawler kept it: after transfer decoding and
// content decoding, possibly cut at a size limit. So that WARC readers
// interpret the stored body correctly, Transfer-Encoding and
// Content-Encoding are removed and Content-Length is set to bodyLen; the
// original values, where they differ, are kept as
// X-Layercrawl-Orig-<Field>. proto defaults to "HTTP/1.1".
func ResponseHead(proto string, statusCode int, header http.Header, bodyLen int) []byte {
	if proto == "" {
		proto = "HTTP/1.1"
	}
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for _, k := range []string{"Transfer-Encoding", "Content-Encoding"} {
		if v, ok := h[k]; ok {
			h[origFieldPrefix+k] = v
			delete(h, k)
		}
	}
	cl := strconv.Itoa(bodyLen)
	if v, ok := h["Content-Length"]; ok && (len(v) != 1 || v[0] != cl) {
		h[origFieldPrefix+"Content-Length"] = v
	}
	h["Content-Length"] = []string{cl}
	var b bytes.Buffer
	text := http.StatusText(statusCode)
	if text == "" {
		text = "status code " + strconv.Itoa(statusCode)
	}
	fmt.Fprintf(&b, "%s %03d %s\r\n", proto, statusCode, text)
	writeHeader(&b, h)
	b.WriteString("\r\n")
	return b.Bytes()
}

// writeHeader writes h in name order, dropping line breaks from values so
// that a hostile header cannot forge WARC structure.
func writeHeader(b *bytes.Buffer, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	r := strings.NewReplacer("\r", " ", "\n", " ")
	for _, k := range keys {
		if !isToken(k) {
			continue
		}
		for _, v := range h[k] {
			fmt.Fprintf(b, "%s: %s\r\n", k, r.Replace(v))
		}
	}
}

// isToken reports whether s is a non-empty RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
