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
// else in full. It sets le.DuplicateOf for a revisit of this crawl, and
// le.Recrawl "unchanged" for a revisit of prev, the earlier crawls'
// capture of the URL (nil when none): a 304 answered to the conditional
// request (profile server-not-modified) or a 2xx of prev's payload
// (identical-payload-digest). It fills cp's payload fields (Capture) when
// the response is a whole 2xx or a revisit of prev.
//
// Payloads are compared by their WARC-Payload-Digest as the archive writes
// it: over the payload as received, the chunked coding removed and the
// content coding kept (storage.ParseResponse), as other archives compute
// it, so that the index agrees with their CDX files. A gzip'd response and
// an identity-coded one of the same page are different payloads.
func (c *Crawler) archiveResponse(ctx context.Context, ex *storage.Exchange, res *fetch.Result, le *storage.Entry, prev, cp *Capture) (storage.WARCRef, error) {
	rw, canRevisit := c.archive.(WARCRevisitWriter)
	ok2xx := res.Status >= 200 && res.Status < 300
	var (
		digest string
		size   int64
		whole  bool
	)
	if (ok2xx || res.Status == 304 && prev != nil) && ex.Truncated == "" && (c.payloads != nil && canRevisit || c.history != nil || prev != nil) {
		digest, size, whole = wirePayload(ex)
		if ok2xx {
			ex.PayloadDigest = digest // the writer need not hash the body again
		}
	}
	if prev != nil && prev.hasPayload() && canRevisit && whole {
		of := storage.Revisit{TargetURI: prev.TargetURI, Date: prev.Date, RecordID: prev.RecordID}
		switch {
		case res.Status == 304:
			of.Profile = storage.RevisitNotModified
			ex.PayloadDigest, size = prev.PayloadDigest, prev.Length
		case ok2xx && digest == prev.PayloadDigest:
			of.Profile = storage.RevisitProfile
		}
		if of.Profile != "" {
			ref, err := rw.WriteRevisit(ex, of)
			if err != nil {
				return ref, fmt.Errorf("crawl: archive: %w", err)
			}
			le.Recrawl = recrawlUnchanged
			c.counters.recrawl.saved.Add(uint64(size))
			cp.copyPayload(prev)
			return ref, nil
		}
	}
	full := func() (storage.WARCRef, error) {
		ref, err := c.writeFull(ex)
		if err == nil && ok2xx && whole {
			cp.setPayload(ex, ref, digest, size)
		}
		return ref, err
	}
	if c.payloads == nil || !canRevisit || !ok2xx || !whole {
		return full()
	}
	if p, ok := c.payloads.(*storePayloads); ok {
		if n := p.takeDropped(); n > 0 {
			c.opts.Logger.Info("payload index of the previous format dropped: its digests were of decoded bodies; revisits start afresh",
				"digests", n, "format", payloadFormat)
		}
	}
	if c.opts.RevisitMinSize >= 0 && size < c.opts.RevisitMinSize {
		return full()
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
		return full()
	}
	ref, err := rw.WriteRevisit(ex, earlier)
	if err != nil {
		return ref, fmt.Errorf("crawl: archive: %w", err)
	}
	le.DuplicateOf = earlier.TargetURI
	c.counters.revisits.Add(1)
	c.counters.revisitBytes.Add(uint64(size))
	// The payload index names the response (not where it is).
	cp.PayloadDigest, cp.TargetURI, cp.Date, cp.RecordID, cp.Length = digest, earlier.TargetURI, earlier.Date, earlier.RecordID, size
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
