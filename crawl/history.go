package crawl

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// Capture is a URL's entry in a crawl's capture history: what the last
// fetch of the URL answered, and where the archive holds its payload. A
// later crawl given this one (Options.Previous) sends the validators in a
// conditional request and refers its revisit records to the response
// record named here.
type Capture struct {
	URL      string    `json:"u"`           // canonical URL fetched
	Status   int       `json:"s"`           // HTTP status of the fetch (200 for a 304 answered to a conditional request)
	Fetched  time.Time `json:"f"`           // when it was fetched
	Depth    int       `json:"d"`           // hops from a seed; -1 when not known (a history rebuilt from WARC files)
	Hops     string    `json:"h,omitempty"` // hop path from a seed
	ETag     string    `json:"e,omitempty"` // ETag of the response (or of the earlier one, a 304 that had none)
	LastMod  string    `json:"l,omitempty"` // Last-Modified of the response, as the server wrote it
	Location string    `json:"g,omitempty"` // Location of a redirect

	// The response record holding the payload: for a fetch archived as a
	// revisit, the record it refers to (never a revisit: the chain ends
	// at the first response).
	PayloadDigest string    `json:"p,omitempty"` // its WARC-Payload-Digest
	TargetURI     string    `json:"t,omitempty"` // its WARC-Target-URI
	Date          time.Time `json:"w,omitzero"`  // its WARC-Date
	RecordID      string    `json:"r,omitempty"` // its WARC-Record-ID
	WARCFile      string    `json:"a,omitempty"` // its WARC file: a base name in the crawl's own history, a path in an imported one; empty when not known
	Offset        int64     `json:"o,omitempty"` // offset of its gzip member in WARCFile
	Length        int64     `json:"n,omitempty"` // length of its payload
}

// setPayload makes c name the payload of the response record ref, which
// holds ex.
func (c *Capture) setPayload(ex *storage.Exchange, ref storage.WARCRef, digest string, size int64) {
	c.PayloadDigest, c.TargetURI, c.Date, c.RecordID = digest, ex.TargetURI, ex.Date, ref.ResponseID
	c.WARCFile, c.Offset, c.Length = ref.File, ref.ResponseOffset, size
}

// copyPayload makes c name the payload prev names, and keeps prev's
// validators where the new response sent none (a 304 need not repeat
// them).
func (c *Capture) copyPayload(prev *Capture) {
	c.PayloadDigest, c.TargetURI, c.Date, c.RecordID = prev.PayloadDigest, prev.TargetURI, prev.Date, prev.RecordID
	c.WARCFile, c.Offset, c.Length = prev.WARCFile, prev.Offset, prev.Length
	if c.ETag == "" {
		c.ETag = prev.ETag
	}
	if c.LastMod == "" {
		c.LastMod = prev.LastMod
	}
}

// hasPayload reports whether c names a response record whose payload a
// revisit can refer to.
func (c *Capture) hasPayload() bool {
	return c.Status >= 200 && c.Status < 300 && c.PayloadDigest != "" && c.TargetURI != "" && !c.Date.IsZero()
}

// Keys of the capture history in the local store.
const (
	historyPrefix     = "x/h/" // + URL -> Capture: this crawl's history
	previousPrefix    = "x/q/" // + URL -> Capture: the earlier crawls' history, imported
	historyVersionKey = "x/hv" // historyFormat
	previousDoneKey   = "x/qd" // the earlier crawls' URLs were queued (a resume does not import again)
	recordPrefix      = "x/r/" // + WARC-Record-ID -> responseLocation, while the earlier crawls are imported
)

// historyFormat is the capture history's format, written with its first
// batch. An earlier crawl's state with another format is refused
// (ErrPreviousFormat).
const historyFormat = "capture-history v1"

// historyBatch is how many captures are written to the store together.
const historyBatch = 256

func encodeCapture(c *Capture) []byte {
	b, err := json.Marshal(c)
	if err != nil {
		// A Capture holds strings, ints and valid times only.
		panic("crawl: encode capture: " + err.Error())
	}
	return b
}

func decodeCapture(v []byte) (Capture, error) {
	var c Capture
	if err := json.Unmarshal(v, &c); err != nil {
		return c, fmt.Errorf("capture record: %w", err)
	}
	return c, nil
}

// historyLog writes this crawl's capture history to its store in
// batches, as the payload index does: a crash loses the unwritten ones,
// whose URLs a later crawl then fetches unconditionally.
type historyLog struct {
	store frontier.Store

	mu        sync.Mutex        // protects pending and versioned
	pending   map[string][]byte // key -> encoded Capture
	versioned bool              // the store holds historyVersionKey
}

func openHistoryLog(st frontier.Store) (*historyLog, error) {
	h := &historyLog{store: st, pending: make(map[string][]byte)}
	v, err := st.Get([]byte(historyVersionKey))
	switch {
	case err == nil && string(v) == historyFormat:
		h.versioned = true
	case err == nil:
		return nil, fmt.Errorf("%w: capture history format %q, want %q", ErrCorruptState, v, historyFormat)
	case !errors.Is(err, frontier.ErrNotFound):
		return nil, fmt.Errorf("crawl: capture history: %w", err)
	}
	return h, nil
}

// markVersion records the history's format in the store.
func (h *historyLog) markVersion() error {
	err := h.store.Write(func(w frontier.Writer) error { return w.Set([]byte(historyVersionKey), []byte(historyFormat)) })
	if err != nil {
		return fmt.Errorf("crawl: capture history: %w", err)
	}
	h.mu.Lock()
	h.versioned = true
	h.mu.Unlock()
	return nil
}

// add records c; the batch is written once full.
func (h *historyLog) add(c *Capture) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending[historyPrefix+c.URL] = encodeCapture(c)
	if len(h.pending) >= historyBatch {
		return h.flushLocked()
	}
	return nil
}

func (h *historyLog) flush() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.flushLocked()
}

func (h *historyLog) flushLocked() error {
	if len(h.pending) == 0 {
		return nil
	}
	err := h.store.Write(func(w frontier.Writer) error {
		for k, v := range h.pending {
			if err := w.Set([]byte(k), v); err != nil {
				return err
			}
		}
		if !h.versioned {
			return w.Set([]byte(historyVersionKey), []byte(historyFormat))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("crawl: capture history: %w", err)
	}
	clear(h.pending)
	h.versioned = true
	return nil
}

// flushHistory writes the capture history's unwritten captures.
func (c *Crawler) flushHistory() error {
	if c.history == nil {
		return nil
	}
	return c.history.flush()
}
