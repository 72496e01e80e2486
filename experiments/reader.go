package experiments

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// Format says how a line of an input file holds its URL.
type Format uint8

const (
	// FormatAuto takes the last tab-separated field of every line, so that
	// plain lists, "id<TAB>url" files and Sogou query-log lines (whose
	// clicked URL is the last column) all read without configuration.
	FormatAuto Format = iota
	// FormatPlain takes the whole line (trimmed) as the URL.
	FormatPlain
	// FormatSogouQ reads Sogou query-log lines: tab-separated, the URL in
	// column ReadOptions.Column (1-based; 0 means the last column). The log
	// stores URLs without a scheme, so "http://" is assumed unless
	// ReadOptions.DefaultScheme says otherwise.
	FormatSogouQ
	// FormatIDURL reads "id<TAB>url" lines such as the SogouT link set; a
	// line without a tab is bad.
	FormatIDURL
)

// String returns the name ParseFormat accepts.
func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatPlain:
		return "plain"
	case FormatSogouQ:
		return "sogouq"
	case FormatIDURL:
		return "idurl"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat returns the Format named s ("auto", "plain", "sogouq",
// "idurl").
func ParseFormat(s string) (Format, error) {
	for _, f := range []Format{FormatAuto, FormatPlain, FormatSogouQ, FormatIDURL} {
		if f.String() == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("experiments: unknown format %q (want auto, plain, sogouq or idurl): %w", s, ErrInvalidOptions)
}

// DefaultMaxLineBytes is the default ReadOptions.MaxLineBytes: 1 MiB, well
// above the longest URL of the shared datasets (65,535 bytes).
const DefaultMaxLineBytes = 1 << 20

// ReadOptions configures the readers. The zero value reads any of the
// supported formats line by line (FormatAuto) and accepts only absolute
// http(s) URLs.
type ReadOptions struct {
	// Format of the lines; default FormatAuto.
	Format Format
	// Column is the 1-based tab-separated column holding the URL for
	// FormatSogouQ; 0 (the default) means the last column.
	Column int
	// DefaultScheme is prefixed (with "://") to a URL that has no scheme.
	// Default: "" (such a line is bad), except for FormatSogouQ where the
	// empty string means "http".
	DefaultScheme string
	// MaxLineBytes is the longest line kept; longer lines are skipped
	// (streamed past, never buffered whole) and counted as bad. Default
	// DefaultMaxLineBytes.
	MaxLineBytes int
}

// ErrInvalidOptions is wrapped by the errors about bad options.
var ErrInvalidOptions = errors.New("experiments: invalid options")

// Validate reports options that cannot be used.
func (o *ReadOptions) Validate() error {
	if o.Format > FormatIDURL {
		return fmt.Errorf("experiments: format %v: %w", o.Format, ErrInvalidOptions)
	}
	if o.Column < 0 {
		return fmt.Errorf("experiments: column %d is negative: %w", o.Column, ErrInvalidOptions)
	}
	if o.MaxLineBytes < 0 {
		return fmt.Errorf("experiments: max line bytes %d is negative: %w", o.MaxLineBytes, ErrInvalidOptions)
	}
	for i := 0; i < len(o.DefaultScheme); i++ {
		if !isSchemeByte(o.DefaultScheme[i], i == 0) {
			return fmt.Errorf("experiments: default scheme %q: %w", o.DefaultScheme, ErrInvalidOptions)
		}
	}
	return nil
}

func (o ReadOptions) withDefaults() ReadOptions {
	if o.MaxLineBytes == 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.Format == FormatSogouQ && o.DefaultScheme == "" {
		o.DefaultScheme = "http"
	}
	return o
}

// BadReason says why a line was rejected.
type BadReason uint8

const (
	// BadNoURL: the line (or its URL column) has no "scheme://" and no
	// default scheme applies, or nothing follows "://".
	BadNoURL BadReason = iota
	// BadScheme: the scheme is not http or https.
	BadScheme
	// BadTooLong: the line is longer than ReadOptions.MaxLineBytes.
	BadTooLong
	// BadColumns: the line lacks the tab-separated column the format needs.
	BadColumns
	// BadNUL: the line holds a NUL byte, the mark of binary data rather
	// than text. Other control bytes are kept: the shared datasets hold
	// real URLs with them (a 0x19 standing for an apostrophe).
	BadNUL
	numBadReasons
)

func (r BadReason) String() string {
	switch r {
	case BadNoURL:
		return "no absolute URL"
	case BadScheme:
		return "scheme not http(s)"
	case BadTooLong:
		return "line too long"
	case BadColumns:
		return "missing column"
	case BadNUL:
		return "NUL byte"
	}
	return fmt.Sprintf("BadReason(%d)", uint8(r))
}

// BadLine describes one rejected line, for the report.
type BadLine struct {
	Source string // the file name, or "-" for stdin
	Line   int64  // 1-based line number
	Reason BadReason
	Prefix string // the first bytes of the line, quoted when printed
}

// ReadStats counts what a reader saw. Blank lines are neither URLs nor bad.
type ReadStats struct {
	Lines       int64                // lines read, blank ones included
	Blank       int64                // empty or whitespace-only lines
	URLs        int64                // lines that gave a URL (duplicates included)
	Bad         int64                // lines rejected, the sum of BadBy
	BadBy       [numBadReasons]int64 // lines rejected, by BadReason
	InvalidUTF8 int64                // accepted URLs that are not valid UTF-8 (kept byte for byte)
	Examples    []BadLine            // the first MaxBadExamples rejected lines
}

// MaxBadExamples is how many rejected lines ReadStats.Examples keeps.
const MaxBadExamples = 5

// add merges s2 into s.
func (s *ReadStats) add(s2 ReadStats) {
	s.Lines += s2.Lines
	s.Blank += s2.Blank
	s.URLs += s2.URLs
	s.Bad += s2.Bad
	for i := range s.BadBy {
		s.BadBy[i] += s2.BadBy[i]
	}
	s.InvalidUTF8 += s2.InvalidUTF8
	for _, e := range s2.Examples {
		if len(s.Examples) < MaxBadExamples {
			s.Examples = append(s.Examples, e)
		}
	}
}

// ReadURLs reads URLs from r, one per line, calling fn with each accepted
// URL in input order. The bytes passed to fn are only valid during the call.
// r may be plain text or gzip (recognised by its magic bytes, whatever the
// name). Bad lines are counted in the returned stats and skipped; the error
// is non-nil only for a read failure (including a corrupt gzip stream), a
// cancelled ctx or an error from fn, and the stats then cover what was read.
// source names r in the stats' examples.
func ReadURLs(ctx context.Context, r io.Reader, source string, opts ReadOptions, fn func(url []byte) error) (ReadStats, error) {
	var st ReadStats
	if err := opts.Validate(); err != nil {
		return st, err
	}
	opts = opts.withDefaults()
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return st, fmt.Errorf("experiments: %s: %w", source, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	var line []byte // reused when a line spans several buffer fills
	for {
		if st.Lines&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		chunk, err := br.ReadSlice('\n')
		tooLong := false
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: accumulate up to the limit,
			// then stream past the rest without keeping it.
			line = append(line[:0], chunk...)
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = br.ReadSlice('\n')
				if !tooLong && len(line)+len(chunk) <= opts.MaxLineBytes+2 {
					line = append(line, chunk...)
				} else {
					tooLong = true
				}
			}
			chunk = line
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return st, fmt.Errorf("experiments: read %s: %w", source, err)
		}
		if len(chunk) == 0 && err != nil { // EOF after the last newline
			return st, nil
		}
		st.Lines++
		content := bytes.TrimRight(chunk, "\r\n")
		if tooLong || len(content) > opts.MaxLineBytes {
			st.reject(source, content, BadTooLong)
		} else if u, reason, ok := extractURL(content, opts); !ok {
			if reason == badBlank {
				st.Blank++
			} else {
				st.reject(source, content, reason)
			}
		} else {
			st.URLs++
			if !utf8.Valid(u) {
				st.InvalidUTF8++
			}
			if ferr := fn(u); ferr != nil {
				return st, ferr
			}
		}
		if err != nil { // EOF on a last line without newline
			return st, nil
		}
	}
}

// badBlank is a pseudo-reason for blank lines, which are not bad.
const badBlank = numBadReasons

func (st *ReadStats) reject(source string, line []byte, reason BadReason) {
	st.Bad++
	st.BadBy[reason]++
	if len(st.Examples) < MaxBadExamples {
		p := line
		if len(p) > 80 {
			p = p[:80]
		}
		st.Examples = append(st.Examples, BadLine{Source: source, Line: st.Lines, Reason: reason, Prefix: string(p)})
	}
}

// extractURL returns the URL of one line (without its line ending), or the
// reason it has none. The returned slice aliases line unless a default
// scheme had to be prefixed.
func extractURL(line []byte, o ReadOptions) ([]byte, BadReason, bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, badBlank, false
	}
	field := line
	switch o.Format {
	case FormatAuto:
		if i := bytes.LastIndexByte(line, '\t'); i >= 0 {
			field = line[i+1:]
		}
	case FormatIDURL:
		i := bytes.IndexByte(line, '\t')
		if i < 0 {
			return nil, BadColumns, false
		}
		field = line[i+1:]
	case FormatSogouQ:
		cols := bytes.Split(line, []byte{'\t'})
		c := len(cols)
		if o.Column > 0 {
			c = o.Column
		}
		if c > len(cols) || len(cols) < 2 {
			return nil, BadColumns, false
		}
		field = cols[c-1]
	}
	u := bytes.TrimSpace(field)
	if len(u) == 0 {
		return nil, BadNoURL, false
	}
	if bytes.IndexByte(line, 0) >= 0 {
		return nil, BadNUL, false
	}
	sep := schemeEnd(u)
	if sep < 0 {
		if o.DefaultScheme == "" {
			return nil, BadNoURL, false
		}
		u = append([]byte(o.DefaultScheme+"://"), u...)
		sep = len(o.DefaultScheme)
	}
	if !isHTTPScheme(u[:sep]) {
		return nil, BadScheme, false
	}
	if len(u) == sep+3 {
		return nil, BadNoURL, false
	}
	return u, 0, true
}

// schemeEnd returns the index of "://" after a syntactically valid scheme
// (RFC 3986 section 3.1) at the start of u, or -1.
func schemeEnd(u []byte) int {
	for i, b := range u {
		if b == ':' {
			if i > 0 && bytes.HasPrefix(u[i:], []byte("://")) {
				return i
			}
			return -1
		}
		if !isSchemeByte(b, i == 0) {
			return -1
		}
	}
	return -1
}

func isSchemeByte(b byte, first bool) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z':
		return true
	case first:
		return false
	case '0' <= b && b <= '9', b == '+', b == '-', b == '.':
		return true
	}
	return false
}

func isHTTPScheme(s []byte) bool {
	return bytes.EqualFold(s, []byte("http")) || bytes.EqualFold(s, []byte("https"))
}

// Source is one input of a Dataset: a file path, or "-" for Stdin.
type Source struct {
	Path  string
	Stdin io.Reader // read when Path is "-"
}

// readSource opens one source and streams it through ReadURLs.
func readSource(ctx context.Context, src Source, opts ReadOptions, fn func([]byte) error) (ReadStats, error) {
	if src.Path == "-" {
		if src.Stdin == nil {
			return ReadStats{}, fmt.Errorf("experiments: stdin requested but none given: %w", ErrInvalidOptions)
		}
		return ReadURLs(ctx, src.Stdin, "-", opts, fn)
	}
	f, err := os.Open(src.Path)
	if err != nil {
		return ReadStats{}, fmt.Errorf("experiments: %w", err)
	}
	defer f.Close()
	return ReadURLs(ctx, f, src.Path, opts, fn)
}
