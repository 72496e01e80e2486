package fetch

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html/charset"
)

// Sitemap errors. ParseSitemap wraps one of them; with ErrSitemapMalformed,
// ErrSitemapTooLarge and ErrSitemapGzipBomb it also returns what it read
// before the fault.
var (
	// ErrSitemapMalformed: the XML is not well-formed (or is cut short),
	// the gzip stream is corrupt, or the elements nest too deep.
	ErrSitemapMalformed = errors.New("fetch: malformed sitemap")
	// ErrSitemapContentType: the response is not a sitemap: an HTML page
	// (a soft 404 at /sitemap.xml, say), an image, JSON, binary data.
	ErrSitemapContentType = errors.New("fetch: not a sitemap content type")
	// ErrSitemapRoot: well-formed XML whose root element is not one of
	// urlset, sitemapindex, rss or feed.
	ErrSitemapRoot = errors.New("fetch: unknown sitemap root element")
	// ErrSitemapTooLarge: the sitemap is longer than MaxBytes, which
	// sitemaps.org forbids (50 MiB); reading stopped there.
	ErrSitemapTooLarge = errors.New("fetch: sitemap larger than the size limit")
	// ErrSitemapGzipBomb: a gzip-compressed sitemap inflates past
	// MaxBytes; decompression stopped there, having cost at most MaxBytes
	// of output and constant memory.
	ErrSitemapGzipBomb = errors.New("fetch: gzip sitemap inflates past the size limit")
)

// Sitemap limits of the sitemaps.org protocol, the SitemapOptions
// defaults.
const (
	DefaultSitemapMaxURLs      = 50_000
	DefaultSitemapMaxBytes     = 50 << 20 // 52,428,800 bytes, uncompressed
	DefaultSitemapMaxURLLength = 2048
)

// maxSitemapToken bounds the bytes between two '<' of an XML sitemap:
// encoding/xml holds each token (a text, a comment, a tag) whole, and a
// sitemap's longest is a <loc> of at most MaxURLLength.
const maxSitemapToken = 1 << 20

// maxSitemapDepth bounds XML nesting: a sitemap nests 2 to 4 levels (5
// with Google's news extension); a document nested deeper is not one, and
// encoding/xml keeps a stack entry per open element.
const maxSitemapDepth = 32

// SitemapOptions configures ParseSitemap. The zero value gives the
// defaults; a negative value turns a limit off.
type SitemapOptions struct {
	// MaxURLs caps the entries kept per file; those beyond are counted in
	// Sitemap.Dropped. Default DefaultSitemapMaxURLs (50,000).
	MaxURLs int
	// MaxBytes caps the uncompressed bytes read per file. Default
	// DefaultSitemapMaxBytes (50 MiB).
	MaxBytes int64
	// MaxURLLength skips longer URLs (counted in Sitemap.Skipped).
	// Default DefaultSitemapMaxURLLength (2,048: sitemaps.org wants
	// shorter URLs).
	MaxURLLength int
}

// EnsureDefaults sets every zero field of o to its documented default.
func (o *SitemapOptions) EnsureDefaults() {
	if o.MaxURLs == 0 {
		o.MaxURLs = DefaultSitemapMaxURLs
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultSitemapMaxBytes
	}
	if o.MaxURLLength == 0 {
		o.MaxURLLength = DefaultSitemapMaxURLLength
	}
}

// SitemapKind is the format of a sitemap.
type SitemapKind uint8

// Sitemap formats (sitemaps.org "Sitemap file location" and "Other
// formats").
const (
	SitemapURLSet SitemapKind = iota + 1 // <urlset>: pages
	SitemapIndex                         // <sitemapindex>: other sitemaps
	SitemapText                          // a text file, one URL per line
	SitemapFeed                          // an RSS 2.0 or Atom feed
)

// String returns the format's name: urlset, sitemapindex, text or feed.
func (k SitemapKind) String() string {
	switch k {
	case SitemapURLSet:
		return "urlset"
	case SitemapIndex:
		return "sitemapindex"
	case SitemapText:
		return "text"
	case SitemapFeed:
		return "feed"
	}
	return "SitemapKind(" + strconv.Itoa(int(k)) + ")"
}

// SitemapEntry is one URL a sitemap lists.
type SitemapEntry struct {
	// Loc is the URL as written, whitespace trimmed (XML entities
	// decoded): an absolute http or https URL. For an index it names a
	// sitemap, otherwise a page.
	Loc string
	// LastMod is the <lastmod> (a feed's pubDate, updated or modified)
	// when present and valid, else the zero Time. W3C datetimes without a
	// time ("2024-05") mean the start of that period, in UTC.
	LastMod time.Time
}

// Sitemap is what ParseSitemap read from one file.
type Sitemap struct {
	Kind SitemapKind
	// Entries are the URLs listed, in file order, at most MaxURLs.
	Entries []SitemapEntry
	// Dropped counts valid entries beyond MaxURLs: they were read (up to
	// MaxBytes), counted and left out.
	Dropped int
	// Skipped counts <loc> values (lines of a text sitemap) that are not
	// absolute http(s) URLs or are longer than MaxURLLength.
	Skipped int
	// BadLastMod counts entries whose date could not be parsed; they are
	// kept, with a zero LastMod.
	BadLastMod int
	// Gzip reports that the body was gzip-compressed.
	Gzip bool
	// Bytes counts the uncompressed bytes read.
	Bytes int64
	// Truncated reports that reading stopped at MaxBytes.
	Truncated bool
}

// ParseSitemap reads one sitemap file from r: an XML urlset or
// sitemapindex (sitemaps.org), an RSS 2.0 or Atom feed, or a text file of
// one URL per line, gzip-compressed or not. It reads r as a stream,
// holding one XML token (at most 1 MiB: a longer text or comment is
// ErrSitemapMalformed) or one line at a time, however long r is.
//
// Gzip is recognised by its magic bytes, whatever contentType says: the
// fetcher has already removed a Content-Encoding, so a .xml.gz served
// with Content-Encoding: gzip arrives as plain XML, and one served as
// application/x-gzip (or application/octet-stream) arrives compressed.
// contentType (may be empty) is only used to refuse what is not a sitemap:
// text/html and application/xhtml+xml, images, JSON and other types that
// are neither XML, text, gzip nor octet-stream give ErrSitemapContentType,
// as does a body that sniffs as HTML or binary data.
//
// Limits: at most MaxURLs entries are kept and the rest counted in
// Dropped; at most MaxBytes uncompressed bytes are read, and a file longer
// than that gives ErrSitemapTooLarge (ErrSitemapGzipBomb if compressed)
// with the entries read until then. URLs that are not absolute http(s)
// URLs, or too long, are counted in Skipped. Errors wrap one of the
// ErrSitemap sentinels; with malformed XML or a cut gzip stream the
// entries before the fault are returned too.
//
// Recursion over index files is the caller's: each Entry of a
// SitemapIndex names a sitemap to fetch and parse in turn. sitemaps.org
// allows no index in an index, so a crawl that follows index entries one
// level deep (and treats an index found there as an error to count),
// fetches each sitemap URL once (its seen-set), and caps the sitemaps per
// host reads at most files × MaxBytes per host: with 50,000 children of
// 50 MiB each per index, that cap is what bounds the work.
func ParseSitemap(r io.Reader, contentType string, opts SitemapOptions) (*Sitemap, error) {
	opts.EnsureDefaults()
	if mt := mediaType(contentType); !sitemapType(mt) {
		return nil, fmt.Errorf("%w: Content-Type %q", ErrSitemapContentType, mt)
	}
	sm := &Sitemap{}
	raw := &errReader{r: r}
	br := bufio.NewReader(raw)
	var body io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			if raw.err != nil && raw.err != io.EOF {
				return nil, fmt.Errorf("fetch: reading sitemap: %w", raw.err)
			}
			return nil, fmt.Errorf("%w: gzip: %v", ErrSitemapMalformed, err)
		}
		defer zr.Close()
		sm.Gzip = true
		body = zr
	}
	lr := &limitedReader{r: body, n: opts.MaxBytes}
	in := bufio.NewReader(lr)
	if bom, _ := in.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		in.Discard(3) // cannot fail: Peek buffered the bytes
	}
	head, _ := in.Peek(512)
	sniffed := http.DetectContentType(head)
	var err error
	if first := bytes.TrimLeft(head, " \t\r\n"); len(first) > 0 && first[0] == '<' {
		err = sm.parseXML(in, opts)
		if sm.Kind == 0 && err != nil && strings.HasPrefix(sniffed, "text/html") {
			// HTML that is not well-formed XML, or whose first element
			// is not <html>.
			err = fmt.Errorf("%w: the body is an HTML page", ErrSitemapContentType)
		}
	} else if len(first) == 0 || strings.HasPrefix(sniffed, "text/plain") {
		sm.parseText(in, opts)
	} else {
		err = fmt.Errorf("%w: the body sniffs as %s", ErrSitemapContentType, sniffed)
	}
	sm.Bytes = lr.read
	switch {
	case errors.Is(err, ErrSitemapContentType):
		return nil, err
	case lr.over:
		sm.Truncated = true
		if sm.Gzip {
			return sm, fmt.Errorf("%w: more than %d bytes", ErrSitemapGzipBomb, opts.MaxBytes)
		}
		return sm, fmt.Errorf("%w: more than %d bytes", ErrSitemapTooLarge, opts.MaxBytes)
	case raw.err != nil && raw.err != io.EOF:
		return sm, fmt.Errorf("fetch: reading sitemap: %w", raw.err)
	case lr.err != nil && lr.err != io.EOF: // the gzip stream is corrupt or cut
		return sm, fmt.Errorf("%w: gzip: %v", ErrSitemapMalformed, lr.err)
	}
	return sm, err
}

// sitemapType reports whether a media type can carry a sitemap.
func sitemapType(mt string) bool {
	switch mt {
	case "", "text/xml", "application/xml", "text/plain", "application/gzip",
		"application/x-gzip", "application/octet-stream", "binary/octet-stream":
		return true
	}
	return strings.HasSuffix(mt, "+xml") && mt != "application/xhtml+xml"
}

// errReader records the error of the reader it wraps.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// limitedReader reads at most n bytes (n < 0: any number) and records
// whether there were more, and the underlying error.
type limitedReader struct {
	r    io.Reader
	n    int64
	read int64
	over bool  // a byte past the limit was seen
	err  error // the underlying reader's error, once it failed
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.n >= 0 {
		left := l.n - l.read
		if left <= 0 {
			// One byte more tells a file of exactly n bytes from a
			// longer one.
			var one [1]byte
			if k, _ := io.ReadFull(l.r, one[:]); k > 0 {
				l.over = true
			}
			l.err = io.EOF
			return 0, io.EOF
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	k, err := l.r.Read(p)
	l.read += int64(k)
	if err != nil {
		l.err = err
	}
	return k, err
}

// add keeps or counts one URL; tooLong reports a <loc> cut while read.
func (sm *Sitemap) add(loc, lastmod string, tooLong bool, parseDate func(string) (time.Time, bool), opts SitemapOptions) {
	loc = strings.TrimSpace(loc)
	if tooLong || !sitemapURL(loc, opts.MaxURLLength) {
		sm.Skipped++
		return
	}
	if opts.MaxURLs >= 0 && len(sm.Entries) >= opts.MaxURLs {
		sm.Dropped++
		return
	}
	e := SitemapEntry{Loc: loc}
	if lastmod = strings.TrimSpace(lastmod); lastmod != "" {
		var ok bool
		if e.LastMod, ok = parseDate(lastmod); !ok {
			sm.BadLastMod++
		}
	}
	sm.Entries = append(sm.Entries, e)
}

// sitemapURL reports whether loc is an absolute http(s) URL with a host,
// no longer than maxLen (negative: any length).
func sitemapURL(loc string, maxLen int) bool {
	if loc == "" || (maxLen >= 0 && len(loc) > maxLen) {
		return false
	}
	u, err := url.Parse(loc)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// parseText reads a text sitemap: one URL per line, blank lines ignored.
// A line longer than MaxURLLength is counted in Skipped without being
// held.
func (sm *Sitemap) parseText(r *bufio.Reader, opts SitemapOptions) {
	sm.Kind = SitemapText
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if opts.MaxURLLength >= 0 && len(line) > opts.MaxURLLength+2 { // + "\r\n"
				tooLong, line = true, line[:0]
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if s := strings.TrimSpace(string(line)); s != "" || tooLong {
			sm.add(s, "", tooLong, nil, opts)
		}
		line, tooLong = line[:0], false
		if err != nil {
			return // io.EOF, or the size limit: ParseSitemap looks at the reader
		}
	}
}

// xmlFormat describes where an XML sitemap format keeps its entries.
type xmlFormat struct {
	kind      SitemapKind
	entry     []string // the path of an entry below the root
	url       string   // the entry's child holding the URL
	urlAttr   string   // the attribute of url holding it, or "" for its text
	dates     []string // the entry's children holding its date
	parseDate func(string) (time.Time, bool)
}

// xmlFormats are the XML formats sitemaps.org accepts, by root element.
var xmlFormats = map[string]*xmlFormat{
	"urlset":       {SitemapURLSet, []string{"url"}, "loc", "", []string{"lastmod"}, parseW3CDatetime},
	"sitemapindex": {SitemapIndex, []string{"sitemap"}, "loc", "", []string{"lastmod"}, parseW3CDatetime},
	"rss":          {SitemapFeed, []string{"channel", "item"}, "link", "", []string{"pubDate"}, parseRSSDate},
	"feed":         {SitemapFeed, []string{"entry"}, "link", "href", []string{"updated", "modified"}, parseW3CDatetime}, // Atom 1.0 and 0.3
}

// tokenLimitReader fails once more than max bytes pass without a '<'.
type tokenLimitReader struct {
	r        io.Reader
	max, run int // run: bytes since the last '<'
}

var errLongToken = fmt.Errorf("an XML token longer than %d bytes", maxSitemapToken)

func (t *tokenLimitReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '<'); i >= 0 {
		t.run = n - i - 1
	} else {
		t.run += n
	}
	if t.run > t.max {
		return n, errLongToken
	}
	return n, err
}

// parseXML reads an XML sitemap or feed; on a syntax error it keeps what
// it read before.
func (sm *Sitemap) parseXML(r io.Reader, opts SitemapOptions) error {
	d := xml.NewDecoder(bufio.NewReader(&tokenLimitReader{r: r, max: maxSitemapToken}))
	d.CharsetReader = charset.NewReaderLabel // sitemaps must be UTF-8; some are not
	var (
		f          *xmlFormat
		root       xml.Name
		path       []string // local names of the open elements below the root; "" for other namespaces
		inEntry    bool
		inURL      bool // in the entry's URL element
		inDate     bool // in one of its date elements
		loc, date  []byte
		locTooLong bool
	)
	maxLoc := opts.MaxURLLength
	if maxLoc < 0 {
		maxLoc = int(min(opts.MaxBytes, 1<<62))
	}
	for {
		tok, err := d.Token()
		if err == io.EOF && f != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSitemapMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if f == nil {
				if t.Name.Local == "html" {
					return fmt.Errorf("%w: the body is an HTML page", ErrSitemapContentType)
				}
				if f = xmlFormats[t.Name.Local]; f == nil {
					return fmt.Errorf("%w: <%s>", ErrSitemapRoot, t.Name.Local)
				}
				root, sm.Kind = t.Name, f.kind
				continue
			}
			if len(path) >= maxSitemapDepth {
				return fmt.Errorf("%w: elements nested more than %d deep", ErrSitemapMalformed, maxSitemapDepth)
			}
			name := ""
			if t.Name.Space == root.Space {
				name = t.Name.Local
			}
			path = append(path, name)
			switch {
			case !inEntry && slices.Equal(path, f.entry):
				inEntry, loc, date, locTooLong = true, loc[:0], date[:0], false
			case inEntry && len(path) == len(f.entry)+1 && name == f.url:
				if f.urlAttr == "" {
					inURL = true
				} else if rel := attrValue(t.Attr, "rel"); len(loc) == 0 && (rel == "" || rel == "alternate") {
					loc = append(loc, attrValue(t.Attr, f.urlAttr)...) // Atom's <link href>
				}
			case inEntry && len(path) == len(f.entry)+1 && slices.Contains(f.dates, name):
				inDate = true
			}
		case xml.EndElement:
			if len(path) == 0 {
				continue // the root's end
			}
			if inEntry && len(path) == len(f.entry) {
				inEntry = false
				sm.add(string(loc), string(date), locTooLong, f.parseDate, opts)
			}
			inURL, inDate = false, false
			path = path[:len(path)-1]
		case xml.CharData:
			switch {
			case inURL && len(loc)+len(t) > maxLoc+64: // room for whitespace around it
				locTooLong = true
			case inURL:
				loc = append(loc, t...)
			case inDate && len(date) < 64:
				date = append(date, t...)
			}
		}
	}
}

func attrValue(attrs []xml.Attr, name string) string {
	for _, a := range attrs {
		if a.Name.Local == name && a.Name.Space == "" {
			return a.Value
		}
	}
	return ""
}

// w3cLayouts are the W3C datetime profile of ISO 8601
// (https://www.w3.org/TR/NOTE-datetime) that <lastmod> uses; time.Parse
// accepts a fraction of a second after the seconds as well.
var w3cLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04Z07:00",
	"2006-01-02",
	"2006-01",
	"2006",
}

// parseW3CDatetime parses a W3C datetime: YYYY, YYYY-MM, YYYY-MM-DD,
// YYYY-MM-DDThh:mmTZD, YYYY-MM-DDThh:mm:ssTZD or YYYY-MM-DDThh:mm:ss.sTZD,
// where TZD is Z, +hh:mm or -hh:mm.
func parseW3CDatetime(s string) (time.Time, bool) {
	for _, layout := range w3cLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseRSSDate parses an RSS pubDate (RFC 822, with a two- or four-digit
// year, with or without the day name).
func parseRSSDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC1123Z, time.RFC1123, time.RFC822Z, time.RFC822,
		"2 Jan 2006 15:04:05 -0700", "2 Jan 2006 15:04:05 MST", "Mon, 2 Jan 2006 15:04:05 -0700", "Mon, 2 Jan 2006 15:04:05 MST"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return parseW3CDatetime(s)
}
