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
//
// Payloads are compared by their WARC-Payload-Digest as the archive writes
// it: over the payload as received, the chunked coding removed and the
// content coding kept (storage.ParseResponse), as other archives compute
// it, so that the index agrees with their CDX files. A gzip'd response and
// an identity-coded one of the same page are different payloads.
func (c *Crawler) archiveResponse(ctx context.Context, ex *storage.Exchange, res *fetch.Result, le *storage.Entry) (storage.WARCRef, error) {
	rw, canRevisit := c.archive.(WARCRevisitWriter)
	if c.payloads == nil || !canRevisit || res.Status < 200 || res.Status >= 300 || ex.Truncated != "" {
		return c.writeFull(ex)
	}
	if p, ok := c.payloads.(*storePayloads); ok {
		if n := p.takeDropped(); n > 0 {
			c.opts.Logger.Info("payload index of the previous format dropped: its digests were of decoded bodies; revisits start afresh",
				"digests", n, "format", payloadFormat)
		}
	}
	digest, size, whole := wirePayload(ex)
	ex.PayloadDigest = digest // the writer need not hash the body again
	if !whole || c.opts.RevisitMinSize >= 0 && size < c.opts.RevisitMinSize {
		return c.writeFull(ex)
	}
	id, err := storage.NewRecordID()
	if err != nil {
		return storage.WARCRef{}, fmt.Errorf("crawl: archive: %w", err)
	}
	ex.ResponseID = id // named in the index before it is written
	earlier, found, err := c.payloads.TestAndAdd(ctx, digest, storage.Revisit{TargetURI: res.URL, Date: res.FetchedAt, RecordID: id})
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
	c.counters.revisitBytes.Add(uint64(size))
	return ref, nil
}

// wirePayload returns the WARC-Payload-Digest of ex's response as the
// archive writes it, the payload's length, and whether the response is
// whole (no WARC-Truncated, a body that ends where its framing says, a
// response that parses).
func wirePayload(ex *storage.Exchange) (digest string, size int64, whole bool) {
	if len(ex.Response) == 0 {
		return storage.PayloadDigest(ex.Body), int64(len(ex.Body)), ex.Truncated == ""
	}
	r, err := storage.ParseResponse(ex.Response)
	return r.PayloadDigest, r.PayloadLength, err == nil && !r.Cut && ex.Truncated == ""
}

func (c *Crawler) writeFull(ex *storage.Exchange) (storage.WARCRef, error) {
	ref, err := c.archive.Write(ex)
	if err != nil {
		return ref, fmt.Errorf("crawl: archive: %w", err)
	}
	return ref, nil
}
