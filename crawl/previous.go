package crawl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// ErrPrevious is wrapped by the errors of New about an earlier crawl given
// in Options.Previous that cannot be read: a directory that is not a
// crawl's output, a WARC file that does not parse, a state of another
// format. The error names the directory or file. New checks every
// earlier crawl before it creates anything in Dir.
var ErrPrevious = errors.New("crawl: previous crawl")

// Scopes of Options.PreviousScope.
const (
	PreviousScopeAll   = "all"   // every URL the earlier crawls fetched, and what is discovered
	PreviousScopeSeeds = "seeds" // the seeds (given, and the earlier crawls'), and what is discovered
)

// previousSource is one earlier crawl's output directory, checked: its
// capture history is read from its states (open, read-only: state/ of a
// local crawl, state-WORKER/ of each Redis worker that wrote there), or
// rebuilt from its WARC files (states nil) when it has no state or one of
// them has no history.
type previousSource struct {
	dir    string
	states []*storage.Store
	warcs  []string // paths, in name order
	logs   []string // crawl logs (paths): the depths of a rebuilt history
}

// checkPrevious checks every directory of Options.Previous and returns
// them ready to import. It writes nothing anywhere: a state is opened
// read-only, WARC files and crawl logs are read through once.
func checkPrevious(dirs []string, out string) (_ []previousSource, err error) {
	var srcs []previousSource
	defer func() {
		if err != nil {
			closePrevious(srcs)
		}
	}()
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrPrevious, dir, err)
		}
		if o, err := filepath.Abs(out); err == nil && o == abs {
			return nil, fmt.Errorf("%w %s: the new crawl's own output directory", ErrPrevious, dir)
		}
		src, err := checkPreviousDir(abs)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, src)
	}
	return srcs, nil
}

func checkPreviousDir(dir string) (src previousSource, err error) {
	src.dir = dir
	defer func() {
		if err != nil {
			closePrevious([]previousSource{src})
		}
	}()
	fi, err := os.Stat(dir)
	if err != nil {
		return src, fmt.Errorf("%w: %w", ErrPrevious, err)
	}
	if !fi.IsDir() {
		return src, fmt.Errorf("%w %s: not a directory", ErrPrevious, dir)
	}
	warcs, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
	plain, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc"))
	warcs = append(warcs, plain...)
	slices.Sort(warcs)
	src.warcs = warcs
	src.logs, _ = filepath.Glob(filepath.Join(dir, "crawl-*.log.jsonl"))
	if _, err := os.Stat(filepath.Join(dir, "crawl.log.jsonl")); err == nil {
		src.logs = append([]string{filepath.Join(dir, "crawl.log.jsonl")}, src.logs...)
	}
	stateDirs, _ := filepath.Glob(filepath.Join(dir, workerStatePrefix+"*"))
	if fi, err := os.Stat(filepath.Join(dir, "state")); err == nil && fi.IsDir() {
		stateDirs = append([]string{filepath.Join(dir, "state")}, stateDirs...)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return src, fmt.Errorf("%w: %w", ErrPrevious, err)
	}
	complete := len(stateDirs) > 0
	for _, sd := range stateDirs {
		st, err := openPreviousState(sd)
		if err != nil {
			return src, err
		}
		if st == nil {
			complete = false
			continue
		}
		src.states = append(src.states, st)
	}
	if complete {
		return src, nil
	}
	// A state without a history (written before the crawl kept one, or
	// by a worker that stopped before its first batch): the history is
	// rebuilt from the WARC files, all of them.
	closePrevious([]previousSource{src})
	src.states = nil
	if len(warcs) == 0 && len(src.logs) == 0 {
		// A crawl log alone is the output of a crawl (a Redis worker)
		// that archived nothing.
		return src, fmt.Errorf("%w %s: not a crawl's output directory (no state/ with a capture history, no warc/*.warc.gz, no crawl log)", ErrPrevious, dir)
	}
	for _, path := range warcs {
		if err := scanWARC(path, func(*Capture) error { return nil }); err != nil {
			return src, err
		}
	}
	for _, path := range src.logs {
		if err := readPreviousLog(path, func(storage.Entry) error { return nil }); err != nil {
			return src, err
		}
	}
	return src, nil
}

// openPreviousState opens the state in dir read-only; it returns nil
// when the state holds no capture history.
func openPreviousState(dir string) (*storage.Store, error) {
	st, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("%w %s: state: %w", ErrPrevious, dir, err)
	}
	v, err := st.Get([]byte(historyVersionKey))
	switch {
	case err == nil && string(v) == historyFormat:
		return st, nil
	case err == nil:
		st.Close()
		return nil, fmt.Errorf("%w %s: capture history of format %q, this crawler reads %q (written by another version)", ErrPrevious, dir, v, historyFormat)
	case errors.Is(err, storage.ErrNotFound):
		st.Close()
		return nil, nil
	default:
		st.Close()
		return nil, fmt.Errorf("%w %s: state: %w", ErrPrevious, dir, err)
	}
}

// readPreviousLog reads the crawl log at path.
func readPreviousLog(path string, fn func(storage.Entry) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPrevious, err)
	}
	defer f.Close()
	var ferr error
	err = storage.ReadCrawlLog(f, func(e storage.Entry) error {
		ferr = fn(e)
		return ferr
	})
	switch {
	case ferr != nil:
		return ferr
	case err != nil:
		return fmt.Errorf("%w: crawl log %s: %w", ErrPrevious, path, err)
	}
	return nil
}

func closePrevious(srcs []previousSource) {
	for _, s := range srcs {
		for _, st := range s.states {
			st.Close()
		}
	}
}

// scanWARC rebuilds the captures of a WARC file, in file order: one per
// response record and per revisit record (which names the response it
// refers to; the file and offset of that response are not known), with
// the depth a page's metadata record gives (its hopsFromSeed), -1 for the
// others. A file cut inside its last record (a crash) yields the records
// before the cut; a file that is not WARC is an error naming it.
func scanWARC(path string, fn func(*Capture) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPrevious, err)
	}
	defer f.Close()
	base := filepath.Base(path)
	r := storage.NewWARCReader(f)
	var cur *Capture // the last response's capture, until its metadata record may follow
	emit := func() error {
		if cur == nil {
			return nil
		}
		c := cur
		cur = nil
		return fn(c)
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, storage.ErrTruncated) {
			return emit()
		}
		if err != nil {
			return fmt.Errorf("%w: WARC file %s: %w", ErrPrevious, path, err)
		}
		h := rec.Header
		switch strings.ToLower(h.Get("WARC-Type")) {
		case "response", "revisit":
			if err := emit(); err != nil {
				return err
			}
			c, ok := captureOfRecord(rec, base)
			if ok {
				cur = &c
			}
		case "metadata":
			if cur != nil && h.Get("WARC-Concurrent-To") == cur.RecordID {
				cur.Depth, cur.Hops = 0, ""
				for _, line := range strings.Split(string(rec.Block), "\n") {
					if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "hopsFromSeed: "); ok {
						cur.Depth, cur.Hops = len(v), v
					}
				}
			}
			if err := emit(); err != nil {
				return err
			}
		default:
			if err := emit(); err != nil {
				return err
			}
		}
	}
}

// captureOfRecord returns the capture of a response or revisit record
// whose block is an HTTP response; ok is false for any other.
func captureOfRecord(rec *storage.WARCRecord, file string) (Capture, bool) {
	h := rec.Header
	uri := strings.Trim(h.Get("WARC-Target-URI"), "<>")
	if uri == "" || !strings.HasPrefix(uri, "http") {
		return Capture{}, false
	}
	if u, err := url.Parse(uri); err != nil || u.Path == "/robots.txt" {
		// The crawl fetches robots.txt on its own, not as a page.
		return Capture{}, false
	}
	head, _, ok := storage.HTTPPayload(rec.Block)
	if !ok {
		head = rec.Block // a revisit's block is the head alone
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
	if err != nil {
		return Capture{}, false
	}
	resp.Body.Close()
	date, _ := time.Parse(time.RFC3339Nano, h.Get("WARC-Date"))
	c := Capture{
		URL: uri, Status: resp.StatusCode, Fetched: date, Depth: -1,
		ETag: resp.Header.Get("ETag"), LastMod: resp.Header.Get("Last-Modified"), Location: resp.Header.Get("Location"),
		PayloadDigest: h.Get("WARC-Payload-Digest"),
	}
	if _, payload, ok := storage.HTTPPayload(rec.Block); ok {
		c.Length = int64(len(payload))
	}
	if strings.EqualFold(h.Get("WARC-Type"), "response") {
		c.TargetURI, c.Date, c.RecordID, c.WARCFile, c.Offset = uri, date, h.Get("WARC-Record-ID"), file, rec.Offset
		return c, true
	}
	// A revisit: the payload is the response it refers to.
	c.TargetURI = strings.Trim(h.Get("WARC-Refers-To-Target-URI"), "<>")
	c.Date, _ = time.Parse(time.RFC3339Nano, h.Get("WARC-Refers-To-Date"))
	c.RecordID = h.Get("WARC-Refers-To")
	if resp.StatusCode == http.StatusNotModified {
		c.Status = http.StatusOK
	}
	return c, true
}

// importPrevious copies the earlier crawls' capture histories into the
// store under previousPrefix, streaming, in batches: for a URL captured by
// several, the latest fetch wins. WARC files are given as paths. A history
// rebuilt from WARC files takes the depths the metadata records do not
// give from the crawl logs. A capture archived as a revisit is given the
// WARC file and offset of the response record it refers to when that
// record is among the earlier crawls' (revisits of this crawl's payload
// index, and every revisit of a rebuilt history, name only its id).
func (c *Crawler) importPrevious(srcs []previousSource) (int64, error) {
	imp := &previousImport{store: c.captures, norm: c.norm.Normalize, pending: make(map[string][]byte)}
	for _, src := range srcs {
		for _, st := range src.states {
			end := []byte(historyPrefix)
			end[len(end)-1]++
			var ierr error
			err := st.Ascend([]byte(historyPrefix), end, func(_, v []byte) bool {
				cp, err := decodeCapture(v)
				if err != nil {
					ierr = fmt.Errorf("%w %s: %w", ErrPrevious, src.dir, err)
					return false
				}
				if cp.WARCFile != "" && !filepath.IsAbs(cp.WARCFile) {
					// The crawl's own file; an imported one is a path.
					cp.WARCFile = filepath.Join(src.dir, "warc", cp.WARCFile)
				}
				ierr = imp.add(&cp)
				return ierr == nil
			})
			if err == nil {
				err = ierr
			}
			if err != nil {
				return imp.n, err
			}
		}
		if src.states != nil {
			continue
		}
		for _, path := range src.warcs {
			err := scanWARC(path, func(cp *Capture) error {
				if cp.WARCFile != "" {
					cp.WARCFile = path
				}
				return imp.add(cp)
			})
			if err != nil {
				return imp.n, err
			}
		}
		for _, path := range src.logs {
			if err := readPreviousLog(path, imp.depth); err != nil {
				return imp.n, err
			}
		}
	}
	if err := imp.flush(); err != nil {
		return imp.n, err
	}
	if err := imp.resolve(); err != nil {
		return imp.n, err
	}
	return imp.n, nil
}

// previousImport is importPrevious's batch.
type previousImport struct {
	store      frontier.Store
	norm       func(string) (string, error)
	pending    map[string][]byte
	n          int64
	unresolved bool // a capture names its response by id alone
}

// get returns the value of key, pending or stored.
func (p *previousImport) get(key string) ([]byte, bool, error) {
	if v, ok := p.pending[key]; ok {
		return v, true, nil
	}
	v, err := p.store.Get([]byte(key))
	switch {
	case err == nil:
		return v, true, nil
	case errors.Is(err, frontier.ErrNotFound):
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("crawl: import previous captures: %w", err)
}

func (p *previousImport) put(key string, v []byte) error {
	p.pending[key] = v
	if len(p.pending) >= historyBatch {
		return p.flush()
	}
	return nil
}

func (p *previousImport) add(cp *Capture) error {
	if u, err := p.norm(cp.URL); err == nil {
		cp.URL = u
	}
	switch {
	case cp.RecordID == "":
	case cp.WARCFile != "":
		// Where the response record is, for the revisits that name it.
		ref := responseLocation{File: cp.WARCFile, Offset: cp.Offset, Length: cp.Length}
		if err := p.put(recordPrefix+cp.RecordID, ref.encode()); err != nil {
			return err
		}
	case cp.hasPayload():
		p.unresolved = true
	}
	key := previousPrefix + cp.URL
	old, ok, err := p.get(key)
	if err != nil {
		return err
	}
	if ok {
		if prev, err := decodeCapture(old); err == nil && prev.Fetched.After(cp.Fetched) {
			return nil
		}
	} else {
		p.n++
	}
	return p.put(key, encodeCapture(cp))
}

// depth gives the imported capture of e's URL, when its depth is not
// known (a history rebuilt from WARC files: only HTML pages have metadata
// records), the depth and hop path the crawl log says.
func (p *previousImport) depth(e storage.Entry) error {
	if e.Status == 0 {
		return nil
	}
	u, err := p.norm(e.URL)
	if err != nil {
		return nil
	}
	key := previousPrefix + u
	v, ok, err := p.get(key)
	if err != nil || !ok {
		return err
	}
	cp, err := decodeCapture(v)
	if err != nil || cp.Depth >= 0 {
		return nil
	}
	cp.Depth, cp.Hops = e.Depth, e.HopPath
	return p.put(key, encodeCapture(&cp))
}

// resolve gives every imported capture that names its response record by
// id alone the record's file and offset, when an earlier crawl holds it,
// then drops the records' locations.
func (p *previousImport) resolve() error {
	if p.unresolved {
		start := []byte(previousPrefix)
		end := []byte(previousPrefix)
		end[len(end)-1]++
		for {
			var todo []Capture
			var last []byte
			visited := 0
			var ierr error
			err := p.store.Ascend(start, end, func(k, v []byte) bool {
				last = append(last[:0], k...)
				visited++
				cp, err := decodeCapture(v)
				if err != nil {
					ierr = fmt.Errorf("%w: previous capture %s: %w", ErrCorruptState, k, err)
					return false
				}
				if cp.WARCFile == "" && cp.RecordID != "" && cp.hasPayload() {
					todo = append(todo, cp)
				}
				return visited < historyBatch
			})
			if err == nil {
				err = ierr
			}
			if err != nil {
				return fmt.Errorf("crawl: import previous captures: %w", err)
			}
			// The store is not read while it is written.
			for i := range todo {
				cp := &todo[i]
				v, ok, err := p.get(recordPrefix + cp.RecordID)
				if err != nil {
					return err
				}
				if !ok {
					continue // in a crawl not given
				}
				ref, err := decodeResponseLocation(v)
				if err != nil {
					return fmt.Errorf("%w: response record %s: %w", ErrCorruptState, cp.RecordID, err)
				}
				cp.WARCFile, cp.Offset = ref.File, ref.Offset
				if cp.Length == 0 {
					cp.Length = ref.Length
				}
				p.pending[previousPrefix+cp.URL] = encodeCapture(cp)
			}
			if err := p.flush(); err != nil {
				return err
			}
			if visited < historyBatch {
				break
			}
			start = append(last, 0)
		}
	}
	return deletePrefix(p.store, recordPrefix)
}

func (p *previousImport) flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	err := p.store.Write(func(w frontier.Writer) error {
		for k, v := range p.pending {
			if err := w.Set([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("crawl: import previous captures: %w", err)
	}
	clear(p.pending)
	return nil
}

// responseLocation is where a response record of an earlier crawl is,
// kept under recordPrefix while the earlier crawls are imported.
type responseLocation struct {
	File   string `json:"a"`
	Offset int64  `json:"o"`
	Length int64  `json:"n,omitempty"`
}

func (r responseLocation) encode() []byte {
	b, _ := json.Marshal(r) // strings and ints only
	return b
}

func decodeResponseLocation(v []byte) (responseLocation, error) {
	var r responseLocation
	err := json.Unmarshal(v, &r)
	return r, err
}

// deletePrefix deletes every key of st that begins with prefix.
func deletePrefix(st frontier.Store, prefix string) error {
	start := []byte(prefix)
	end := []byte(prefix)
	end[len(end)-1]++
	for {
		var keys [][]byte
		err := st.Ascend(start, end, func(k, _ []byte) bool {
			keys = append(keys, slices.Clone(k))
			return len(keys) < 1024
		})
		if err == nil && len(keys) > 0 {
			err = st.Write(func(w frontier.Writer) error {
				if rd, ok := w.(frontier.RangeDeleter); ok {
					if err := rd.DeleteRange(start, end); !errors.Is(err, errors.ErrUnsupported) {
						return err
					}
				}
				for _, k := range keys {
					if err := w.Delete(k); err != nil {
						return err
					}
				}
				return nil
			})
		}
		if err != nil {
			return fmt.Errorf("crawl: import previous captures: %w", err)
		}
		if len(keys) < 1024 {
			return nil
		}
	}
}

// queuePrevious queues the imported URLs (Options.PreviousScope all: every
// one, at its depth; seeds: those that were seeds), streaming through the
// store, then marks them queued so that a resume does not queue them
// again. The earlier crawls' seeds are seeds of this one: they make its
// scope. In Redis mode every worker queues its copy of the same history
// (Options.Previous being the same for all), in the same batches: the
// shared frontier queues each batch once (redisfrontier.Frontier.AddKnown
// and AddSeeds).
func (c *Crawler) queuePrevious(ctx context.Context) (int, error) {
	var kq knownQueue = c.front
	if c.redis != nil {
		kq = c.redis.front
	}
	if _, err := c.captures.Get([]byte(previousDoneKey)); err == nil {
		return 0, nil
	} else if !errors.Is(err, frontier.ErrNotFound) {
		return 0, fmt.Errorf("crawl: %w", err)
	}
	const batch = 1024
	var known []frontier.Known
	var seeds []string
	queued := 0
	send := func() error {
		if len(seeds) > 0 {
			n, err := c.queue.AddSeeds(ctx, seeds)
			if err != nil {
				return err
			}
			queued += n
		}
		if len(known) > 0 {
			n, err := kq.AddKnown(ctx, known)
			if err != nil {
				return err
			}
			queued += n
		}
		known, seeds = known[:0], seeds[:0]
		return nil
	}
	start := []byte(previousPrefix)
	end := []byte(previousPrefix)
	end[len(end)-1]++
	for {
		var last []byte
		var ierr error
		err := c.captures.Ascend(start, end, func(k, v []byte) bool {
			last = append(last[:0], k...)
			cp, err := decodeCapture(v)
			if err != nil {
				ierr = fmt.Errorf("%w: previous capture %s: %w", ErrCorruptState, k, err)
				return false
			}
			switch {
			case cp.Depth == 0:
				seeds = append(seeds, cp.URL)
			case c.opts.PreviousScope == PreviousScopeAll:
				d := cp.Depth
				if d < 0 {
					d = 1 // not known: one hop, so that it does not make the scope
				}
				known = append(known, frontier.Known{URL: cp.URL, Depth: d, Hops: cp.Hops})
			}
			return len(seeds)+len(known) < batch
		})
		if err == nil {
			err = ierr
		}
		if err != nil {
			return queued, fmt.Errorf("crawl: queue previous captures: %w", err)
		}
		done := len(seeds)+len(known) < batch
		// The store is not read while the frontier writes to it.
		if err := send(); err != nil {
			return queued, fmt.Errorf("crawl: queue previous captures: %w", err)
		}
		if done || last == nil {
			break
		}
		start = append(last, 0)
	}
	err := c.captures.Write(func(w frontier.Writer) error { return w.Set([]byte(previousDoneKey), []byte{1}) })
	if err != nil {
		return queued, fmt.Errorf("crawl: %w", err)
	}
	return queued, nil
}

// knownQueue is the frontier's side of a recrawl: *frontier.Frontier or
// *redisfrontier.Frontier.
type knownQueue interface {
	AddKnown(ctx context.Context, known []frontier.Known) (int, error)
}

// previousCapture returns the earlier crawls' capture of url.
func (c *Crawler) previousCapture(url string) (*Capture, error) {
	if !c.hasPrevious {
		return nil, nil
	}
	v, err := c.captures.Get([]byte(previousPrefix + url))
	if errors.Is(err, frontier.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("crawl: previous capture: %w", err)
	}
	cp, err := decodeCapture(v)
	if err != nil {
		return nil, fmt.Errorf("%w: previous capture of %s: %w", ErrCorruptState, url, err)
	}
	return &cp, nil
}

// conditional returns the preconditions of a request for prev's URL.
func conditional(prev *Capture) fetch.Conditional {
	if prev == nil || !prev.hasPayload() {
		return fetch.Conditional{}
	}
	return fetch.Conditional{ETag: prev.ETag, LastModified: prev.LastMod}
}

// previousLinks sets res's links, res being a 304 answered to prev's
// validators, from prev's response record, read back from its WARC file:
// with PreviousScopeSeeds the pages it links to are queued only so. A
// record that cannot be read is logged, and the page's links are lost.
func (c *Crawler) previousLinks(res *fetch.Result, prev *Capture) {
	if prev.WARCFile == "" {
		c.opts.Logger.Warn("the links of an unchanged page are not followed: its earlier capture's WARC file is not known (a revisit in a history rebuilt from WARC files)",
			"url", res.URL, "previous", prev.RecordID)
		return
	}
	body, contentType, err := readPreviousBody(prev, c.opts.Fetch.MaxBodySize)
	if err != nil {
		c.opts.Logger.Warn("the links of an unchanged page are not followed: its earlier capture cannot be read", "url", res.URL, "err", err)
		return
	}
	old := &fetch.Result{URL: res.URL, Status: http.StatusOK, ContentType: contentType, Body: body, Base: res.Base}
	c.fetcher.ParseLinks(old)
	res.Links, res.Base = old.Links, old.Base
}

// readPreviousBody returns the decoded entity and Content-Type of prev's
// response record.
func readPreviousBody(prev *Capture, limit int64) ([]byte, string, error) {
	f, err := os.Open(prev.WARCFile)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if _, err := f.Seek(prev.Offset, io.SeekStart); err != nil {
		return nil, "", err
	}
	rec, err := storage.NewWARCReader(f).Next()
	if err != nil {
		return nil, "", fmt.Errorf("%s at %d: %w", prev.WARCFile, prev.Offset, err)
	}
	if id := rec.Header.Get("WARC-Record-ID"); id != prev.RecordID {
		return nil, "", fmt.Errorf("%s at %d: record %s, want %s", prev.WARCFile, prev.Offset, id, prev.RecordID)
	}
	head, _, ok := storage.HTTPPayload(rec.Block)
	if !ok {
		return nil, "", fmt.Errorf("%s at %d: no HTTP response", prev.WARCFile, prev.Offset)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
	if err != nil {
		return nil, "", fmt.Errorf("%s at %d: %w", prev.WARCFile, prev.Offset, err)
	}
	resp.Body.Close()
	body, _, err := storage.DecodeResponse(rec.Block, limit)
	if err != nil {
		return nil, "", fmt.Errorf("%s at %d: %w", prev.WARCFile, prev.Offset, err)
	}
	return body, resp.Header.Get("Content-Type"), nil
}
