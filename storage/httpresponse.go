package storage

import (
	"bytes"
	"compress/flate"
	stdgzip "compress/gzip"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
)

// ErrMalformedResponse means a raw HTTP response does not follow HTTP/1.1's
// syntax where its framing depends on it: a status line that does not
// parse, Content-Length values that are not one number, a broken chunk.
// ParseResponse still reports what it found; the writer archives such a
// response byte for byte.
var ErrMalformedResponse = errors.New("storage: malformed HTTP response")

// HTTPResponse locates the parts of an HTTP/1.x response as it was read from
// a connection, for a request other than HEAD. Offsets index the bytes
// given to ParseResponse.
type HTTPResponse struct {
	// StatusCode is the final response's status code; 0 when its status
	// line does not parse.
	StatusCode int
	// HeadStart is where the final response's status line starts: the
	// bytes before it are 1xx interim responses (other than 101), which
	// have no body and are skipped as HTTP clients skip them.
	HeadStart int
	// BodyStart is where the message body starts, after the final head's
	// blank line; len(raw) when the head has none.
	BodyStart int
	// BodyEnd is where the message body ends as its framing says (or
	// where the bytes, or a chunk that cannot be read, end it); bytes
	// after it belong to no part of the response.
	BodyEnd int
	// Chunked says the body has the chunked transfer coding.
	Chunked bool
	// PayloadLength is the length of the payload: the body with the
	// chunked transfer coding removed and the content coding kept.
	PayloadLength int64
	// Cut says the response ends before its framing does: inside the
	// head, short of Content-Length, or before the last chunk and the
	// trailer section's blank line. The payload is what arrived.
	Cut bool
	// PayloadDigest is the WARC-Payload-Digest of the payload, "sha1:"
	// and the base32 SHA-1.
	PayloadDigest string
}

// ParseResponse finds the head, body and payload of raw, an HTTP/1.x
// response as received (status line, header fields, message body with its
// transfer coding and content coding), and computes its payload digest.
// It never fails to return a digest; the rules for what does not parse:
//
//   - 1xx responses other than 101 before the final one are skipped. A
//     line ends in CRLF or a bare LF; a head ends at its first empty line.
//   - A head without its blank line: the response was cut inside it;
//     Cut is set and the payload is empty.
//   - 1xx, 204 and 304 responses have no body.
//   - Transfer-Encoding (HTTP/1.1 and later) whose last coding is chunked:
//     the chunks are joined; chunk extensions and trailer fields are
//     skipped. A body cut inside a chunk yields the data that arrived,
//     with Cut. Transfer codings other than chunked are kept, and a
//     Transfer-Encoding without chunked means the body runs to the end.
//   - Otherwise Content-Length, when its values are one decimal number;
//     fewer bytes than it says sets Cut.
//   - Otherwise the body runs to the end of raw (HTTP/1.0 read-until-close).
//
// The error, matching ErrMalformedResponse, is for a status line that does
// not parse (the payload is then everything after the head's blank line),
// conflicting or non-numeric Content-Length values (the body then runs to
// the end), or a chunk-size line that is not hexadecimal, or chunk data not
// followed by a line end (the payload is then the chunks before it).
func ParseResponse(raw []byte) (HTTPResponse, error) {
	var d payloadHasher
	d.h = sha1.New()
	r, err := parseResponse(raw, d.write)
	r.PayloadDigest = d.digest()
	return r, err
}

// ResponsePayloadDigest returns the WARC-Payload-Digest of a raw HTTP
// response, as ParseResponse computes it.
func ResponsePayloadDigest(raw []byte) (string, error) {
	r, err := ParseResponse(raw)
	return r.PayloadDigest, err
}

// ResponsePayload returns the payload of a raw HTTP response (the body with
// the chunked transfer coding removed, content coding kept) as
// ParseResponse finds it: a subslice of raw unless the body is chunked.
// Content decoding (gzip, br) is left to the reader.
func ResponsePayload(raw []byte) ([]byte, HTTPResponse, error) {
	var p []byte
	chunks := 0
	r, err := parseResponse(raw, func(b []byte) {
		chunks++
		if chunks == 1 {
			p = b // no copy when the payload is one piece of raw
			return
		}
		if chunks == 2 {
			p = append([]byte(nil), p...)
		}
		p = append(p, b...)
	})
	return p, r, err
}

type payloadHasher struct {
	h hash.Hash
}

func (d *payloadHasher) write(b []byte) { d.h.Write(b) }

func (d *payloadHasher) digest() string {
	var sum [sha1.Size]byte
	return string(appendDigest(nil, d.h.Sum(sum[:0])))
}

// parseResponse implements ParseResponse, handing the payload's pieces to
// emit (nil: not wanted) in order.
func parseResponse(raw []byte, emit func([]byte)) (HTTPResponse, error) {
	var r HTTPResponse
	pos, h := finalHead(raw)
	if h.end < 0 {
		r.HeadStart, r.BodyStart, r.BodyEnd, r.Cut = pos, len(raw), len(raw), true
		r.StatusCode = max(h.status, 0)
		if h.status < 0 && pos == 0 && bytes.IndexByte(raw, '\n') >= 0 {
			return r, fmt.Errorf("%w: status line %q", ErrMalformedResponse, firstLine(raw))
		}
		return r, nil
	}
	r.HeadStart, r.BodyStart = pos, pos+h.end
	r.StatusCode = max(h.status, 0)
	body := raw[r.BodyStart:]
	out := func(b []byte) {
		if len(b) == 0 {
			return
		}
		r.PayloadLength += int64(len(b))
		if emit != nil {
			emit(b)
		}
	}
	toEnd := func() {
		out(body)
		r.BodyEnd = len(raw)
	}
	if h.status < 0 {
		toEnd()
		return r, fmt.Errorf("%w: status line %q", ErrMalformedResponse, firstLine(raw[pos:]))
	}
	switch {
	case h.status/100 == 1 || h.status == 204 || h.status == 304:
		r.BodyEnd = r.BodyStart
	case h.http11 && h.te != nil:
		if !lastCodingChunked(h.te) {
			toEnd()
			return r, nil
		}
		r.Chunked = true
		end, cut, err := dechunk(body, out)
		r.BodyEnd, r.Cut = r.BodyStart+end, cut
		return r, err
	case h.cl != nil:
		n, empty, ok := contentLength(h.cl)
		if !ok {
			toEnd()
			return r, fmt.Errorf("%w: Content-Length %q", ErrMalformedResponse, h.cl)
		}
		if empty { // as if absent, as net/http takes it
			toEnd()
			return r, nil
		}
		if n > uint64(len(body)) {
			out(body)
			r.BodyEnd, r.Cut = len(raw), true
			return r, nil
		}
		out(body[:n])
		r.BodyEnd = r.BodyStart + int(n)
	default:
		toEnd()
	}
	return r, nil
}

// finalHead reads the heads at the start of raw, skipping 1xx interim
// responses (but 101), and returns where the final one starts and what it
// holds; its end is -1 when raw ends before its blank line.
func finalHead(raw []byte) (pos int, h headInfo) {
	for {
		h = readHead(raw[pos:])
		if h.end < 0 || h.status < 100 || h.status > 199 || h.status == 101 {
			return pos, h
		}
		pos += h.end
	}
}

// headsEnd returns where the final head of raw ends, or -1 when raw ends
// before it does: a block that starts with raw[:headsEnd(raw)] has the
// same heads, whatever follows.
func headsEnd(raw []byte) int {
	pos, h := finalHead(raw)
	if h.end < 0 {
		return -1
	}
	return pos + h.end
}

// headInfo is what a response's framing needs from its head.
type headInfo struct {
	status int    // status code; -1 when the status line does not parse
	http11 bool   // HTTP/1.1 or later: Transfer-Encoding applies
	te     []byte // Transfer-Encoding values joined by commas; nil when absent
	cl     [][]byte
	end    int // offset after the blank line; -1 when there is none
}

// readHead reads the head at the start of b: a status line, field lines
// (an obsolete folded line continues the field before it) and an empty
// line, each line ending in LF with an optional CR before it.
func readHead(b []byte) headInfo {
	h := headInfo{status: -1, end: -1}
	i := 0
	first := true
	last := -1 // 0 Transfer-Encoding, 1 Content-Length, -1 other
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			if first {
				h.status, h.http11 = parseStatusLine(b)
			}
			return h
		}
		line := b[i : i+j]
		i += j + 1
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if first {
			first = false
			h.status, h.http11 = parseStatusLine(line)
			if len(line) == 0 {
				h.end = i
				return h
			}
			continue
		}
		if len(line) == 0 {
			h.end = i
			return h
		}
		if line[0] == ' ' || line[0] == '\t' {
			v := trimOWS(line)
			switch last {
			case 0:
				h.te = append(append(h.te, ' '), v...)
			case 1:
				k := len(h.cl) - 1
				h.cl[k] = append(append(h.cl[k][:len(h.cl[k]):len(h.cl[k])], ' '), v...)
			}
			continue
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		last = -1
		if !ok {
			continue
		}
		value = trimOWS(value)
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			last = 0
			if h.te != nil {
				h.te = append(h.te, ',')
			}
			h.te = append(append([]byte{}, h.te...), value...)
		case bytes.EqualFold(name, []byte("Content-Length")):
			last = 1
			h.cl = append(h.cl, value)
		}
	}
}

// parseStatusLine parses "HTTP/x.y nnn reason" as net/http does, returning
// the status code (-1 when the line does not parse) and whether the
// version is 1.1 or later.
func parseStatusLine(line []byte) (int, bool) {
	proto, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return -1, false
	}
	major, minor, ok := parseHTTPVersion(proto)
	if !ok {
		return -1, false
	}
	code, _, _ := bytes.Cut(bytes.TrimLeft(rest, " "), []byte(" "))
	if len(code) != 3 {
		return -1, false
	}
	n, err := strconv.Atoi(string(code))
	if err != nil || n < 0 {
		return -1, false
	}
	return n, major > 1 || major == 1 && minor >= 1
}

// parseHTTPVersion parses "HTTP/d.d".
func parseHTTPVersion(v []byte) (major, minor int, ok bool) {
	if len(v) != len("HTTP/X.Y") || string(v[:5]) != "HTTP/" || v[6] != '.' {
		return 0, 0, false
	}
	if v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

// lastCodingChunked reports whether the last transfer coding of a
// Transfer-Encoding list is chunked.
func lastCodingChunked(te []byte) bool {
	if i := bytes.LastIndexByte(te, ','); i >= 0 {
		te = te[i+1:]
	}
	coding, _, _ := bytes.Cut(te, []byte(";"))
	return bytes.EqualFold(trimOWS(coding), []byte("chunked"))
}

// contentLength returns the length that Content-Length values give: ok
// false when they differ or are not decimal numbers, empty true when the
// value is empty.
func contentLength(values [][]byte) (n uint64, empty, ok bool) {
	first := values[0]
	for _, v := range values[1:] {
		if !bytes.Equal(v, first) {
			return 0, false, false
		}
	}
	if len(first) == 0 {
		return 0, true, true
	}
	n, err := strconv.ParseUint(string(first), 10, 63)
	return n, false, err == nil
}

// dechunk hands the data of the chunked body b to out and returns where
// the body ends, whether it was cut short, and an error for a chunk it
// cannot read.
func dechunk(b []byte, out func([]byte)) (end int, cut bool, err error) {
	i := 0
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return len(b), true, nil
		}
		line := b[i : i+j]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, ok := parseHex(trimOWS(size))
		if !ok {
			return i, false, fmt.Errorf("%w: chunk size %q", ErrMalformedResponse, truncateQuote(line))
		}
		i += j + 1
		if n == 0 {
			// The trailer section, up to its empty line.
			for {
				j := bytes.IndexByte(b[i:], '\n')
				if j < 0 {
					return len(b), true, nil
				}
				line := b[i : i+j]
				i += j + 1
				if len(line) == 0 || len(line) == 1 && line[0] == '\r' {
					return i, false, nil
				}
			}
		}
		if n > uint64(len(b)-i) {
			out(b[i:])
			return len(b), true, nil
		}
		out(b[i : i+int(n)])
		i += int(n)
		switch {
		case i == len(b) || i+1 == len(b) && b[i] == '\r':
			return len(b), true, nil
		case b[i] == '\n':
			i++
		case b[i] == '\r' && b[i+1] == '\n':
			i += 2
		default:
			return i, false, fmt.Errorf("%w: chunk data not followed by a line end", ErrMalformedResponse)
		}
	}
}

// parseHex parses a chunk size: 1 to 16 hexadecimal digits.
func parseHex(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, true
}

// trimOWS trims what net/textproto trims around a field value: ASCII
// spaces, tabs, CRs and LFs.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && isTextprotoSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isTextprotoSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isTextprotoSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return truncateQuote(bytes.TrimSuffix(b, []byte("\r")))
}

// truncateQuote keeps an error message's quote of received bytes short.
func truncateQuote(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// ErrContentCoding means a payload's Content-Encoding is one
// DecodeResponse does not decode, or its data does not decode.
var ErrContentCoding = errors.New("storage: cannot decode content coding")

// DecodeResponse returns the entity of a raw HTTP response for analysis
// (link extraction, text): the payload as ResponsePayload finds it, with
// the content codings of its Content-Encoding removed (gzip, x-gzip,
// deflate as zlib or raw, identity), at most limit bytes (limit <= 0: no
// limit; more sets cut). The archive keeps the bytes as received; this is
// the reader's side. The error matches ErrContentCoding for a coding it
// does not know or data that does not decode (entity then holds the payload
// with the codings applied after it removed, or the output of the one that
// failed, up to limit), or ErrMalformedResponse as ParseResponse's.
func DecodeResponse(raw []byte, limit int64) (entity []byte, cut bool, err error) {
	p, r, err := ResponsePayload(raw)
	entity = p
	codings := contentCodings(raw[r.HeadStart:r.BodyStart])
	for i := len(codings) - 1; i >= 0; i-- {
		c := codings[i]
		if c == "identity" {
			continue
		}
		if c != "gzip" && c != "x-gzip" && c != "deflate" {
			err = fmt.Errorf("%w: %q", ErrContentCoding, c)
			break
		}
		var derr error
		if entity, cut, derr = inflate(c, entity, limit); derr != nil {
			err = fmt.Errorf("%w: %s: %w", ErrContentCoding, c, derr)
			break
		}
	}
	if limit > 0 && int64(len(entity)) > limit {
		entity, cut = entity[:limit], true
	}
	return entity, cut, err
}

// contentCodings returns the codings of head's Content-Encoding fields in
// the order they were applied, lower case.
func contentCodings(head []byte) []string {
	var out []string
	for i, line := range bytes.Split(head, []byte("\n")) {
		if i == 0 {
			continue
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(name, []byte("Content-Encoding")) {
			continue
		}
		for c := range bytes.SplitSeq(value, []byte(",")) {
			if c = trimOWS(c); len(c) > 0 {
				out = append(out, string(bytes.ToLower(c)))
			}
		}
	}
	return out
}

// inflate decodes one gzip or deflate coding of b, reading at most limit+1
// bytes of output so that a bomb costs no more than the limit.
func inflate(coding string, b []byte, limit int64) ([]byte, bool, error) {
	var zr io.ReadCloser
	var err error
	switch {
	case coding != "deflate":
		zr, err = stdgzip.NewReader(bytes.NewReader(b))
	case len(b) >= 2 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0 && b[0]&0x0f == 8:
		zr, err = zlib.NewReader(bytes.NewReader(b)) // RFC 9110's deflate: zlib
	default:
		zr = flate.NewReader(bytes.NewReader(b)) // what some servers send: raw deflate
	}
	if err != nil {
		return nil, false, err
	}
	defer zr.Close()
	var src io.Reader = zr
	if limit > 0 {
		src = io.LimitReader(zr, limit+1)
	}
	out, err := io.ReadAll(src)
	if limit > 0 && int64(len(out)) > limit {
		return out[:limit], true, nil
	}
	return out, false, err
}
