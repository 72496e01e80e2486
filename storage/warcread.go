package storage

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WARCField is one named field of a WARC record header.
type WARCField struct {
	Name, Value string
}

// WARCHeader is a record's header fields in file order.
type WARCHeader []WARCField

// Get returns the value of the first field named name (case-insensitive),
// or "".
func (h WARCHeader) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// WARCRecord is one record read by WARCReader.
type WARCRecord struct {
	Version string     // "WARC/1.1" or "WARC/1.0"
	Header  WARCHeader // the named fields
	Block   []byte     // Content-Length bytes of content block
	Offset  int64      // file offset of the gzip member (or, uncompressed, the record) holding it
	// Length is the size of the gzip member from Offset (uncompressed: of
	// the record with its closing CRLF CRLF): the bytes an index points a
	// reader to. It is 0 when the member holds further records, which
	// have the same Offset.
	Length int64
}

// maxWARCHeader bounds a record's header (all its lines together) so that
// garbage cannot make the reader buffer, or work, without limit.
const maxWARCHeader = 1 << 20

// WARCReader reads records from a WARC file, gzip-compressed (one or more
// records per member) or not. It is not safe for concurrent use.
type WARCReader struct {
	cr       *countingReader
	src      *bufio.Reader // over cr
	zr       *gzip.Reader  // nil for an uncompressed file
	zerr     *errReader    // over zr: remembers the decompressor's own error
	rec      *bufio.Reader // decompressed stream of the current member
	memberAt int64
	started  bool
	err      error
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// NewWARCReader returns a reader of the WARC stream r.
func NewWARCReader(r io.Reader) *WARCReader {
	cr := &countingReader{r: r}
	return &WARCReader{cr: cr, src: bufio.NewReaderSize(cr, 64<<10)}
}

// pos is the offset in the file of the next unread byte of src.
func (r *WARCReader) pos() int64 { return r.cr.n - int64(r.src.Buffered()) }

// Next returns the next record, io.EOF after the last, an error matching
// ErrTruncated when the file ends inside a record (every whole record
// before it has been returned), or one matching ErrCorrupt when the data is
// not WARC. After an error, Next returns the same error.
func (r *WARCReader) Next() (*WARCRecord, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
	}
	return rec, err
}

func (r *WARCReader) next() (*WARCRecord, error) {
	if !r.started {
		r.started = true
		magic, err := r.src.Peek(2)
		if len(magic) == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			if err := r.nextMember(); err != nil {
				return nil, err
			}
		} else {
			r.rec = r.src
		}
	}
	for {
		// Skip blank lines some writers leave between records.
		for {
			b, err := r.rec.Peek(1)
			if len(b) == 1 && (b[0] == '\r' || b[0] == '\n') {
				r.rec.ReadByte()
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, r.wrapReadErr(err)
			}
			break
		}
		if r.zr == nil {
			r.memberAt = r.pos() // uncompressed: errors name the record's offset
		}
		at := r.memberAt
		if _, err := r.rec.Peek(1); errors.Is(err, io.EOF) {
			if r.zr == nil {
				return nil, io.EOF
			}
			// End of this member; go on with the next, if any.
			if _, err := r.src.Peek(1); errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			if err := r.nextMember(); err != nil {
				return nil, err
			}
			continue
		}
		rec, err := r.readRecord()
		if err != nil {
			return nil, err
		}
		if r.zr != nil {
			// Read on to the member's end, if this record is its last, so
			// that its gzip trailer (length and CRC) is checked before
			// the record is returned.
			_, err := r.rec.Peek(1)
			if err != nil && !(errors.Is(err, io.EOF) && r.zerr.err == nil) {
				return nil, r.wrapReadErr(err)
			}
			if err != nil {
				// The member ended with this record; the gzip reader
				// has read its trailer and nothing after it.
				rec.Length = r.pos() - at
			}
		} else {
			rec.Length = r.pos() - at
		}
		rec.Offset = at
		return rec, nil
	}
}

func (r *WARCReader) nextMember() error {
	r.memberAt = r.pos()
	var err error
	if r.zr == nil {
		r.zr, err = gzip.NewReader(r.src)
	} else {
		err = r.zr.Reset(r.src)
	}
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: gzip header cut at offset %d", ErrTruncated, r.memberAt)
		}
		if errors.Is(err, gzip.ErrHeader) {
			return fmt.Errorf("%w: WARC: no gzip member at offset %d", ErrCorrupt, r.memberAt)
		}
		return fmt.Errorf("storage: WARC read at offset %d: %w", r.memberAt, err)
	}
	r.zr.Multistream(false)
	r.zerr = &errReader{r: r.zr}
	if r.rec == nil {
		r.rec = bufio.NewReaderSize(r.zerr, 64<<10)
	} else {
		r.rec.Reset(r.zerr)
	}
	return nil
}

// wrapReadErr classifies a failure to read a record: the file ending
// inside it (ErrTruncated), data that is not WARC or not gzip (ErrCorrupt),
// or an I/O error, returned wrapped.
func (r *WARCReader) wrapReadErr(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if r.zr != nil {
		zerr := r.zerr.err
		switch {
		case zerr == nil && eof:
			// The member ended cleanly, in the middle of a record.
			return fmt.Errorf("%w: WARC record runs past the end of its gzip member at offset %d", ErrCorrupt, r.memberAt)
		case errors.Is(zerr, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w: gzip member at offset %d", ErrTruncated, r.memberAt)
		case errors.Is(zerr, gzip.ErrChecksum), errors.Is(zerr, gzip.ErrHeader):
			return fmt.Errorf("%w: WARC gzip member at offset %d: %v", ErrCorrupt, r.memberAt, zerr)
		case zerr != nil:
			var ce flate.CorruptInputError
			if errors.As(zerr, &ce) {
				return fmt.Errorf("%w: WARC gzip member at offset %d: %v", ErrCorrupt, r.memberAt, zerr)
			}
			return fmt.Errorf("storage: WARC read at offset %d: %w", r.memberAt, zerr)
		}
	} else if eof {
		return fmt.Errorf("%w: record at offset %d", ErrTruncated, r.memberAt)
	}
	return fmt.Errorf("storage: WARC read: %w", err)
}

// readLine reads one header line, without its CR LF, counting its bytes
// against *budget.
func (r *WARCReader) readLine(budget *int) (string, error) {
	var line []byte
	for {
		frag, err := r.rec.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > *budget {
			return "", fmt.Errorf("%w: WARC header longer than %d bytes", ErrCorrupt, maxWARCHeader)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return "", r.wrapReadErr(err)
	}
	*budget -= len(line)
	return strings.TrimRight(string(line), "\r\n"), nil
}

func (r *WARCReader) readRecord() (*WARCRecord, error) {
	budget := maxWARCHeader
	version, err := r.readLine(&budget)
	if err != nil {
		return nil, err
	}
	if version != "WARC/1.1" && version != "WARC/1.0" {
		return nil, fmt.Errorf("%w: WARC version line %.40q", ErrCorrupt, version)
	}
	rec := &WARCRecord{Version: version}
	// A field's value with its continuation lines is gathered in value and
	// stored when the next field starts: appending to the stored string
	// instead would copy it once per line, quadratic in the header size.
	var value []byte
	flush := func() {
		if len(rec.Header) > 0 {
			rec.Header[len(rec.Header)-1].Value = string(value)
		}
	}
	for {
		line, err := r.readLine(&budget)
		if err != nil {
			return nil, err
		}
		if line == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if len(rec.Header) == 0 {
				return nil, fmt.Errorf("%w: WARC continuation line before any field", ErrCorrupt)
			}
			value = append(append(value, ' '), strings.TrimSpace(line)...)
			continue
		}
		name, v, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			return nil, fmt.Errorf("%w: WARC header line %.60q", ErrCorrupt, line)
		}
		flush()
		rec.Header = append(rec.Header, WARCField{Name: name})
		value = append(value[:0], strings.TrimSpace(v)...)
	}
	flush()
	cl := rec.Header.Get("Content-Length")
	n, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: WARC Content-Length %q", ErrCorrupt, cl)
	}
	var block bytes.Buffer
	if _, err := io.CopyN(&block, r.rec, n); err != nil {
		return nil, r.wrapReadErr(err)
	}
	rec.Block = block.Bytes()
	var end [4]byte
	if _, err := io.ReadFull(r.rec, end[:]); err != nil {
		return nil, r.wrapReadErr(err)
	}
	if string(end[:]) != "\r\n\r\n" {
		return nil, fmt.Errorf("%w: WARC record not followed by CRLF CRLF", ErrCorrupt)
	}
	return rec, nil
}

// HTTPPayload splits the block of a request or response record at its
// first blank line (CRLF CRLF) into the HTTP head and the bytes after it. ok
// is false when the block has none. For a response record holding the
// response as received, those bytes are the body as sent, chunked or
// gzip'd as it may be: ResponsePayload removes the chunked coding, and
// skips 1xx interim responses.
func HTTPPayload(block []byte) (head, payload []byte, ok bool) {
	i := bytes.Index(block, []byte("\r\n\r\n"))
	if i < 0 {
		return nil, nil, false
	}
	return block[:i+4], block[i+4:], true
}
