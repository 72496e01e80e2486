package crawl

import (
	"context"
	"fmt"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/storage"
)

// WARCRevisitWriter is implemented by an Archive that can write revisit
// records (*storage.WARCWriter); with another Archive every response is
// archived in full.
type WARCRevisitWriter interface {
	WriteRevisit(ex *storage.Exchange, of storage.Revisit) (storage.WARCRef, error)
}

// archiveResponse archives a fetch: as a revisit record when its payload
// was archived in full before (and is eligible, see Options.NoRevisits),
// else in full. It sets le.DuplicateOf for a revisit.
func (c *Crawler) archiveResponse(ctx context.Context, ex *storage.Exchange, res *fetch.Result, le *storage.Entry) (storage.WARCRef, error) {
	rw, canRevisit := c.archive.(WARCRevisitWriter)
	if c.payloads == nil || !canRevisit || !c.revisitable(res) {
		return c.writeFull(ex)
	}
	digest := storage.PayloadDigest(res.Body)
	ex.PayloadDigest = digest // the writer need not hash the body again
	earlier, found, err := c.payloads.TestAndAdd(ctx, digest, storage.Revisit{TargetURI: res.URL, Date: res.FetchedAt})
	if err != nil {
		return storage.WARCRef{}, err
	}
	// A page fetched again after a crash finds its own earlier insert,
	// whose response may not have reached the archive: store it in full.
	if !found || earlier.TargetURI == res.URL {
		return c.writeFull(ex)
	}
	ref, err := rw.WriteRevisit(ex, earlier)
	if err != nil {
		return ref, fmt.Errorf("crawl: archive: %w", err)
	}
	le.DuplicateOf = earlier.TargetURI
	c.counters.revisits.Add(1)
	c.counters.revisitBytes.Add(uint64(len(res.Body)))
	return ref, nil
}

func (c *Crawler) writeFull(ex *storage.Exchange) (storage.WARCRef, error) {
	ref, err := c.archive.Write(ex)
	if err != nil {
		return ref, fmt.Errorf("crawl: archive: %w", err)
	}
	return ref, nil
}

// revisitable reports whether a response may be archived as a revisit: a
// whole 2xx payload of at least RevisitMinSize bytes.
func (c *Crawler) revisitable(res *fetch.Result) bool {
	return res.Status >= 200 && res.Status < 300 && res.Truncated == "" &&
		(c.opts.RevisitMinSize < 0 || int64(len(res.Body)) >= c.opts.RevisitMinSize)
}
