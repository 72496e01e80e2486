package crawl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/frontier/redisfrontier"
	"github.com/layercrawl/layercrawl/neardup"
	"github.com/layercrawl/layercrawl/storage"
)

// NearDuplicateFile is the near-duplicate index's snapshot in
// Options.StateDir.
const NearDuplicateFile = "neardup.idx"

// nearDupURLPrefix keys the URL of every indexed page in the local store
// by its id (the XXH3 of the URL), for the log's near_duplicate_of.
const nearDupURLPrefix = "x/nu/"

// nearDups is a crawl's near-duplicate check: a local index with its
// snapshot and the pages' URLs in the store, or (Redis mode) the index
// shared by the workers in Redis.
type nearDups struct {
	set   *neardup.Set   // local mode
	store frontier.Store // local mode: the URL of every indexed page
	path  string         // local mode: the snapshot

	// pending holds the URLs of indexed pages not yet written to store,
	// written together every nearDupURLBatch pages and before every
	// snapshot (local mode); writing, those of the batch being written.
	// Both are read by url, so a URL is found at every moment.
	flushMu sync.Mutex // one flush at a time
	mu      sync.Mutex // protects pending and writing
	pending map[uint64]string
	writing map[uint64]string

	shared *redisNearDups // Redis mode
}

// nearDup is the outcome of checking one page.
type nearDup struct {
	of          string  // the earlier page it resembles; empty if none
	resemblance float64 // estimated
	sameHost    bool
}

// nearDupOptions configure the crawler's near-duplicate index: MinHash by
// one permutation hashing, 32 values in 8 LSH bands of 4, about 270 bytes
// per page. It replaced the bit-sliced PMBF (neardup.Sliced), whose query
// time grows with the pages indexed: 1.9 ms per page at 100,000, which made
// a crawl of 200,000 pages spend more time checking than fetching
// (docs/BENCHMARKS.md, "Near-duplicates"); this one answers in constant time and
// matched it on the similarity experiment at equal memory.
var nearDupOptions = neardup.MinHashOptions{Hashes: 32, Bands: 8, OnePermutation: true}

// openNearDups opens the index: in Redis mode the workers' shared one
// (client not nil), otherwise a local one with its snapshot loaded, of
// whichever kind it is (a state written before the change holds a Sliced
// index, and keeps it).
func (c *Crawler) openNearDups(client *redisfrontier.Client) error {
	if client != nil {
		shared, err := newRedisNearDups(client, c.opts.NearDuplicatePages)
		if err != nil {
			return err
		}
		// Redis mode opens it in Run, while Stats may read it.
		c.mu.Lock()
		c.nearDups = &nearDups{shared: shared}
		c.mu.Unlock()
		return nil
	}
	idx, err := neardup.NewMinHash(nearDupOptions)
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	nd := &nearDups{set: neardup.NewSet(idx), store: c.store, path: filepath.Join(c.opts.StateDir, NearDuplicateFile)}
	err = storage.ReadFileAtomic(nd.path, func(r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		saved, err := neardup.Decode(b)
		if err != nil {
			return err
		}
		nd.set = neardup.NewSet(saved)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %w", ErrCorruptState, nd.path, err)
	}
	c.nearDups = nd
	return nil
}

// saveNearDups writes the index's snapshot (local mode). Pages indexed
// after it are not near-duplicate candidates after a resume: the check is
// best effort, and a crawl resumed after a crash does not fetch them again.
func (c *Crawler) saveNearDups() error {
	nd := c.nearDups
	if nd == nil || nd.path == "" {
		return nil
	}
	// The snapshot holds the lock only to note the index's length, and
	// is written from the index's memory: no copy of a 300 MB index at a
	// million pages, no check waiting for the disk. The URLs of the pages
	// it holds are written first.
	snap, err := nd.set.Snapshot()
	if err != nil {
		return err
	}
	if err := nd.flush(); err != nil {
		return err
	}
	return storage.WriteFileAtomic(nd.path, func(w io.Writer) error {
		_, err := snap.WriteTo(w)
		return err
	})
}

// isHTML reports whether a content type is HTML.
func isHTML(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}

// wantsText reports whether res is a page the near-duplicate check reads.
func (c *Crawler) wantsText(res *fetch.Result) bool {
	return c.nearDups != nil && res != nil && res.Status >= 200 && res.Status < 300 && isHTML(res.ContentType)
}

// shinglers pools the link pass's Shinglers: a page's word hashes grow
// with its text, and growing them anew for every page was 18% of the
// bytes a crawl of the documentation sites allocated (BENCHMARKS.md).
var shinglers = sync.Pool{New: func() any { return new(neardup.Shingler) }}

// maxPooledShinglerBody is the largest body whose Shingler goes back to
// the pool: its word hashes are at most half its bytes times 8, 4 MiB.
const maxPooledShinglerBody = 1 << 20

func getShingler(bodyLen int) *neardup.Shingler {
	if bodyLen > maxPooledShinglerBody {
		return new(neardup.Shingler)
	}
	return shinglers.Get().(*neardup.Shingler)
}

// putShingler pools s once the page's check is over: no index keeps the
// shingle slice (neardup.Index).
func putShingler(s *neardup.Shingler, bodyLen int) {
	if bodyLen <= maxPooledShinglerBody {
		s.Reset()
		shinglers.Put(s)
	}
}

// checkNearDuplicate compares a fetched HTML page with the pages indexed
// before it and indexes it, in one step. shingles has read the page's
// text in the link extraction's pass; when nil, the check reads it.
func (c *Crawler) checkNearDuplicate(ctx context.Context, res *fetch.Result, shingles *neardup.Shingler) (nearDup, error) {
	nd := c.nearDups
	if !c.wantsText(res) {
		return nearDup{}, nil
	}
	start := time.Now()
	defer func() { c.counters.nearDupNanos.Add(uint64(time.Since(start))) }()
	// The index reads the shingle hashes as a set: no sorted set needed
	// (repeats cost a compare each).
	doc := new(neardup.Doc)
	if shingles != nil {
		doc.Shingles = shingles.Shingles(0)
	} else {
		doc.Shingles = neardup.ShingleHashes(neardup.VisibleText(res.Body), 0)
	}
	if len(doc.Shingles) == 0 {
		return nearDup{}, nil
	}
	id := xxh3.HashString(res.URL)
	if nd.shared != nil {
		of, r, err := nd.shared.testAndAdd(ctx, id, res.URL, doc.Shingles, c.opts.NearDuplicateThreshold)
		if err != nil || of == "" {
			return nearDup{}, err
		}
		c.counters.nearDuplicates.Add(1)
		return nearDup{of: of, resemblance: r, sameHost: sameHost(of, res.URL)}, nil
	}
	full := c.opts.NearDuplicatePages >= 0 && int64(nd.set.Len()) >= c.opts.NearDuplicatePages
	var matches []neardup.Match
	if full {
		matches = nd.set.Query(doc, c.opts.NearDuplicateThreshold)
	} else {
		// The URL is stored first: another worker may match the page as
		// soon as it is in the index.
		if err := nd.remember(id, res.URL); err != nil {
			return nearDup{}, err
		}
		matches = nd.set.TestAndAdd(id, doc, c.opts.NearDuplicateThreshold)
	}
	for _, m := range matches {
		if m.ID == id {
			continue // the same URL, fetched again after a crash
		}
		of, err := nd.url(m.ID)
		if errors.Is(err, frontier.ErrNotFound) {
			continue // not expected: the URL is stored before the page is indexed
		}
		if err != nil {
			return nearDup{}, err
		}
		c.counters.nearDuplicates.Add(1)
		return nearDup{of: of, resemblance: m.Resemblance, sameHost: sameHost(of, res.URL)}, nil
	}
	return nearDup{}, nil
}

// nearDupURLBatch is how many pages' URLs are written to the store in one
// batch: a store write per page was 0.11 s of the check's 0.40 s on the
// real-site crawl (docs/BENCHMARKS.md, the near-duplicate check's cost).
const nearDupURLBatch = 256

// remember keeps the URL of a page about to be indexed. The URLs reach the
// store in batches, and all of them before the index's snapshot is
// written, so that every page of a snapshot has its URL in the store: a
// crash loses the URLs of pages indexed since the last snapshot, whose
// index entries it loses too.
func (nd *nearDups) remember(id uint64, u string) error {
	nd.mu.Lock()
	if nd.pending == nil {
		nd.pending = make(map[uint64]string, nearDupURLBatch)
	}
	nd.pending[id] = u
	full := len(nd.pending) >= nearDupURLBatch
	nd.mu.Unlock()
	if full {
		return nd.flush()
	}
	return nil
}

// flush writes the pending URLs to the store in one batch. They are found
// by url while they are written, and pending again if the write fails.
func (nd *nearDups) flush() error {
	nd.flushMu.Lock()
	defer nd.flushMu.Unlock()
	nd.mu.Lock()
	batch := nd.pending
	nd.pending, nd.writing = nil, batch
	nd.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := nd.store.Write(func(w frontier.Writer) error {
		for id, u := range batch {
			if err := w.Set(binary.BigEndian.AppendUint64([]byte(nearDupURLPrefix), id), []byte(u)); err != nil {
				return err
			}
		}
		return nil
	})
	nd.mu.Lock()
	nd.writing = nil
	if err != nil {
		// Keep them for the next flush, behind any newer URL of the
		// same id.
		if nd.pending == nil {
			nd.pending = batch
		} else {
			for id, u := range batch {
				if _, ok := nd.pending[id]; !ok {
					nd.pending[id] = u
				}
			}
		}
	}
	nd.mu.Unlock()
	if err != nil {
		return fmt.Errorf("crawl: near-duplicate index: %w", err)
	}
	return nil
}

func (nd *nearDups) url(id uint64) (string, error) {
	nd.mu.Lock()
	u, ok := nd.pending[id]
	if !ok {
		u, ok = nd.writing[id]
	}
	nd.mu.Unlock()
	if ok {
		return u, nil
	}
	v, err := nd.store.Get(binary.BigEndian.AppendUint64([]byte(nearDupURLPrefix), id))
	if err != nil {
		return "", fmt.Errorf("crawl: near-duplicate index: page %x: %w", id, err)
	}
	return string(v), nil
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host
}

// nearDupStats fills the near-duplicate part of s.
func (c *Crawler) nearDupStats(s *FetchStats) {
	s.NearDuplicates = c.counters.nearDuplicates.Load()
	s.NearDuplicateLinksSkipped = c.counters.nearDupLinks.Load()
	s.NearDuplicateCheck = time.Duration(c.counters.nearDupNanos.Load())
	c.mu.Lock()
	nd := c.nearDups
	c.mu.Unlock()
	if nd != nil && nd.set != nil {
		s.NearDuplicateIndexBytes = uint64(nd.set.SizeBytes())
	}
}
