package crawl

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// What became of a URL that an earlier crawl (Options.Previous) may have
// captured, as the log line's recrawl field says.
const (
	recrawlUnchanged = "unchanged" // archived as a revisit of the earlier capture
	recrawlChanged   = "changed"   // archived in full: another payload, or another status
	recrawlNew       = "new"       // no earlier capture
	recrawlGone      = "gone"      // a 4xx or 5xx where the earlier crawl had a page
)

// RecrawlStats counts what became of the URLs of a crawl given earlier
// crawls (Options.Previous); all zero without them.
type RecrawlStats struct {
	Previous   uint64 `json:"previous"`    // URLs in the earlier crawls' capture history
	Unchanged  uint64 `json:"unchanged"`   // archived as revisits of their earlier capture (304, or the same payload), or the same redirect again
	Changed    uint64 `json:"changed"`     // captured before, archived in full now
	New        uint64 `json:"new"`         // fetched with no earlier capture
	Gone       uint64 `json:"gone"`        // captured before, a 4xx or 5xx now (after any retries)
	BytesSaved uint64 `json:"bytes_saved"` // payload bytes the unchanged pages' revisits did not store again
}

type recrawlCounts struct {
	previous                        atomic.Uint64
	unchanged, changed, fresh, gone atomic.Uint64
	saved                           atomic.Uint64
}

func (k *recrawlCounts) stats() RecrawlStats {
	return RecrawlStats{Previous: k.previous.Load(), Unchanged: k.unchanged.Load(), Changed: k.changed.Load(),
		New: k.fresh.Load(), Gone: k.gone.Load(), BytesSaved: k.saved.Load()}
}

// openPrevious imports the earlier crawls' capture history into the
// store, unless a run of this crawl did already (it resumes).
func (c *Crawler) openPrevious(srcs []previousSource) error {
	c.hasPrevious = true
	if _, err := c.captures.Get([]byte(previousDoneKey)); err == nil {
		return nil
	} else if !errors.Is(err, frontier.ErrNotFound) {
		return fmt.Errorf("crawl: %w", err)
	}
	n, err := c.importPrevious(srcs)
	if err != nil {
		return err
	}
	c.counters.recrawl.previous.Store(uint64(n))
	dirs := make([]string, len(srcs))
	for i, s := range srcs {
		dirs[i] = s.dir
	}
	c.opts.Logger.Info("previous captures imported", "urls", n, "dirs", dirs)
	return nil
}

// recordCapture says in le what became of the URL against prev, counts it
// (final attempts only), and records cp in this crawl's capture history.
// It returns the capture to record (cp, or nil when the fetch leaves the
// URL's last capture as it was), also when there is no history to record
// it in: a continuous crawl in Redis mode keeps it with the schedule.
func (c *Crawler) recordCapture(res *fetch.Result, prev, cp *Capture, final bool, le *storage.Entry) (*Capture, error) {
	if c.hasPrevious && final {
		k := &c.counters.recrawl
		switch {
		case le.Recrawl == recrawlUnchanged:
			k.unchanged.Add(1)
		case prev == nil || prev.Status >= 400:
			// No earlier page: a URL that failed then is new if it
			// answers now.
			if res.Status < 400 {
				le.Recrawl = recrawlNew
				k.fresh.Add(1)
			}
		case res.Status >= 400:
			le.Recrawl = recrawlGone
			k.gone.Add(1)
		case res.Status >= 300 && res.Status < 400 && res.Status == prev.Status && res.Location == prev.Location:
			// The same redirect: archived in full (a head alone), but
			// nothing changed.
			le.Recrawl = recrawlUnchanged
			k.unchanged.Add(1)
		default:
			le.Recrawl = recrawlChanged
			k.changed.Add(1)
		}
		if prev != nil {
			le.Previous, le.PreviousDate = prev.RecordID, prev.Date
		}
	}
	if !final || res.Status == 304 && le.Recrawl != recrawlUnchanged {
		return nil, nil
	}
	if le.Recrawl == recrawlUnchanged && cp.Status == 304 {
		cp.Status = 200 // the payload is the earlier 200's
	}
	if c.history == nil {
		return cp, nil
	}
	return cp, c.history.add(cp)
}
