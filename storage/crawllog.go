package storage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Entry is one line of the crawl log: one fetch attempt.
type Entry struct {
	URL         string    `json:"url"`
	Status      int       `json:"status"`       // HTTP status; 0 when the fetch failed
	Error       string    `json:"error"`        // empty on success
	ContentType string    `json:"content_type"` // as sent by the server
	Bytes       int64     `json:"bytes"`        // body bytes kept (after decompression and truncation)
	Depth       int       `json:"depth"`        // link hops from the seeds
	Via         string    `json:"via"`          // the page the URL was found on; empty for seeds
	HopPath     string    `json:"hop_path"`     // how the URL was reached from a seed, a letter a hop: L link, E embed, R redirect, S sitemap
	FetchedAt   time.Time `json:"fetched_at"`   // start of the fetch; written as RFC 3339 with nanoseconds, UTC
	DurationMS  float64   `json:"duration_ms"`  // wall time of the fetch in milliseconds

	Location     string `json:"location,omitempty"`       // redirect target of a 3xx
	Truncated    string `json:"truncated,omitempty"`      // why the body was cut ("length", "time", ...), as in WARC-Truncated
	IP           string `json:"ip,omitempty"`             // address connected to
	WARCFile     string `json:"warc_file,omitempty"`      // base name of the WARC file holding the response
	WARCRecordID string `json:"warc_record_id,omitempty"` // WARC-Record-ID of the response record

	LastMod time.Time `json:"lastmod,omitzero"` // <lastmod> of the sitemap entry that listed the URL
	// A sitemap's lines: the URLs it listed (kept), those cut past the
	// per-file limit, and why reading it failed (the URLs before the
	// fault are kept).
	SitemapURLs  int    `json:"sitemap_urls,omitempty"`
	SitemapCut   int    `json:"sitemap_cut,omitempty"`
	SitemapError string `json:"sitemap_error,omitempty"`
	DuplicateOf  string `json:"duplicate_of,omitempty"` // URL whose identical payload was archived before: the response is a WARC revisit record

	NearDuplicateOf string  `json:"near_duplicate_of,omitempty"` // earlier page whose text this page resembles (crawl.Options.NearDuplicateThreshold)
	Resemblance     float64 `json:"resemblance,omitempty"`       // estimated resemblance to NearDuplicateOf
	// Attempt numbers the fetches of one URL from 1; 0 on lines that are
	// not fetches (robots.txt refusals, invalid URLs). An attempt that
	// failed transiently and is retried has Error "will-retry: REASON"
	// and RetryAt; the last one that failed so has "retries-exhausted:
	// REASON".
	Attempt int       `json:"attempt,omitempty"`
	RetryAt time.Time `json:"retry_at,omitzero"` // when the URL is fetched again

	// A crawl given earlier crawls' captures (crawl.Options.Previous)
	// says what became of each URL: "unchanged" (archived as a revisit of
	// the earlier capture, or the same redirect again), "changed", "new"
	// or "gone" (a 4xx or 5xx where a capture was); Previous names the earlier capture's response
	// record (WARC-Record-ID) and PreviousDate its WARC-Date.
	Recrawl      string    `json:"recrawl,omitempty"`
	Previous     string    `json:"previous,omitempty"`
	PreviousDate time.Time `json:"previous_date,omitzero"`
}

// CrawlLog appends Entries as JSON lines. It is safe for concurrent use.
// Lines are buffered: Flush hands them to the operating system (they then
// survive a crash of the process), Sync also fsyncs them (they then survive a
// crash of the machine). A crawler that checkpoints its frontier should Sync
// the log first, so that every URL the checkpoint marks done has its line.
type CrawlLog struct {
	mu     sync.Mutex // protects f, w, buf, line and closed
	f      *os.File
	w      *bufio.Writer
	buf    bytes.Buffer // encoding/json's output, for the lines appendEntryJSON leaves to it
	line   []byte       // appendEntryJSON's output
	closed bool
	torn   int64
	// syncs counts the fsyncs running outside mu (Sync); Close waits for
	// them. Added to under mu only.
	syncs sync.WaitGroup
}

// OpenCrawlLog opens the log at path for appending, creating it (and its
// directory) when absent. If the file does not end with a newline, the last
// line was torn by a crash; OpenCrawlLog truncates it away (TornBytes says
// how many bytes) so that every line in the file is a whole JSON object.
func OpenCrawlLog(path string) (*CrawlLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("storage: crawl log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: crawl log: %w", err)
	}
	torn, err := truncateTornLine(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: crawl log %s: %w", path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: crawl log %s: %w", path, err)
	}
	lf := &logFile{f: f, size: size, wb: writeback{started: size}}
	return &CrawlLog{f: f, w: bufio.NewWriterSize(lf, 64<<10), torn: torn}, nil
}

// logFile is the crawl log's file under its buffer: it starts the
// writeback of what the buffer writes to it.
type logFile struct {
	f    *os.File
	size int64
	wb   writeback
}

func (lf *logFile) Write(p []byte) (int, error) {
	n, err := lf.f.Write(p)
	lf.size += int64(n)
	if off, wn := lf.wb.wrote(lf.size); wn > 0 {
		_ = startWriteback(lf.f, off, wn) // a hint: see startWriteback
	}
	return n, err
}

// truncateTornLine cuts f after its last newline and returns how many bytes
// it cut.
func truncateTornLine(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	end := size
	for end > 0 {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep := start + int64(i) + 1
			if keep == size {
				return 0, nil
			}
			return size - keep, truncSync(f, keep)
		}
		end = start
	}
	if size == 0 {
		return 0, nil
	}
	return size, truncSync(f, 0)
}

func truncSync(f *os.File, n int64) error {
	if err := f.Truncate(n); err != nil {
		return err
	}
	return f.Sync()
}

// TornBytes returns how many bytes of a torn last line OpenCrawlLog removed.
func (l *CrawlLog) TornBytes() int64 { return l.torn }

// Write appends e as one line. FetchedAt is converted to UTC.
func (l *CrawlLog) Write(e Entry) error {
	e.FetchedAt = e.FetchedAt.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	line, ok := appendEntryJSON(l.line[:0], &e)
	if !ok {
		// What appendEntryJSON leaves to encoding/json, which says why
		// it cannot be written.
		l.buf.Reset()
		enc := json.NewEncoder(&l.buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&e); err != nil { // Encode appends the newline
			return fmt.Errorf("storage: crawl log: %w", err)
		}
		line = l.buf.Bytes()
	} else {
		l.line = line
	}
	if _, err := l.w.Write(line); err != nil {
		return fmt.Errorf("storage: crawl log: %w", err)
	}
	return nil
}

// Flush writes buffered lines to the file.
func (l *CrawlLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.flushLocked()
}

func (l *CrawlLog) flushLocked() error {
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("storage: crawl log: %w", err)
	}
	return nil
}

// Sync flushes and fsyncs the log. Writes go on during the fsync, which
// runs outside the log's lock (Close waits for it).
func (l *CrawlLog) Sync() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if err := l.flushLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.syncs.Add(1)
	l.mu.Unlock()
	err := l.f.Sync()
	l.syncs.Done()
	if err != nil {
		return fmt.Errorf("storage: crawl log: %w", err)
	}
	return nil
}

// Close syncs and closes the log. Calls after Close return ErrClosed.
func (l *CrawlLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	err := l.flushLocked()
	l.syncs.Wait() // a Sync under way, outside mu
	if serr := l.f.Sync(); err == nil && serr != nil {
		err = fmt.Errorf("storage: crawl log: %w", serr)
	}
	if cerr := l.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("storage: crawl log: %w", cerr)
	}
	return err
}

// ReadCrawlLog calls fn for every entry of a crawl log in order. A last line
// without a newline (torn by a crash) is skipped; any other line that is not
// a JSON object gives an error matching ErrCorrupt that names the line. An
// error from fn stops the read and is returned as is.
func ReadCrawlLog(r io.Reader, fn func(Entry) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil // b, if any, is a torn last line
		}
		if err != nil {
			return fmt.Errorf("storage: crawl log: %w", err)
		}
		var e Entry
		if t := bytes.TrimLeft(b, " \t\r"); len(t) == 0 || t[0] != '{' {
			return fmt.Errorf("%w: crawl log line %d: not a JSON object", ErrCorrupt, line)
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("%w: crawl log line %d: %v", ErrCorrupt, line, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// ReadCrawlLogFile reads the whole crawl log at path into memory.
func ReadCrawlLogFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("storage: crawl log: %w", err)
	}
	defer f.Close()
	var out []Entry
	err = ReadCrawlLog(f, func(e Entry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}
