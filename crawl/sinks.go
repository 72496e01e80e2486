package crawl

import (
	"io"

	"github.com/layercrawl/layercrawl/fetch"
	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/storage"
)

// Seen is the duplicate check of a local crawl: TestAndAdd inserts a URL's
// segments and reports whether they were (probably) present before, in
// one atomic step. The default is a multi-layer Bloom filter
// (mlbf.Concurrent) sized by Options.ExpectedURLs and FalsePositiveRate.
type Seen = frontier.Seen

// Snapshotter is implemented by a Seen that the crawl can save and load,
// so that a resume does not replay every insert since the crawl began.
type Snapshotter interface {
	// Snapshot returns a consistent copy of the set. The crawl calls it
	// while no insert runs and writes the copy out afterwards, while
	// inserts go on.
	Snapshot() (io.WriterTo, error)
	// ReadFrom replaces the set's contents with what a snapshot's WriteTo
	// wrote.
	ReadFrom(r io.Reader) (int64, error)
}

// Log receives one line per fetch attempt; *storage.CrawlLog implements
// it. Before every checkpoint the crawl calls Sync, so that every URL the
// checkpoint marks done has its line on disk.
type Log interface {
	Write(e storage.Entry) error
	// Flush hands written lines to the operating system: the crawl calls
	// it before it marks a URL done, so that a crash of the process
	// cannot lose the line of a URL it will not fetch again.
	Flush() error
	// Sync makes written lines durable.
	Sync() error
}

// Archive receives the HTTP exchanges of the crawl; *storage.WARCWriter
// implements it. Before every checkpoint the crawl calls Sync.
type Archive interface {
	Write(ex *storage.Exchange) (storage.WARCRef, error)
	Sync() error
}

// DiscardLog and DiscardArchive keep nothing, for crawls that only need
// their OnPage hook or Collector.
var (
	DiscardLog     Log     = discardLog{}
	DiscardArchive Archive = discardArchive{}
)

type discardLog struct{}

func (discardLog) Write(storage.Entry) error { return nil }
func (discardLog) Flush() error              { return nil }
func (discardLog) Sync() error               { return nil }

type discardArchive struct{}

func (discardArchive) Write(*storage.Exchange) (storage.WARCRef, error) {
	return storage.WARCRef{}, nil
}
func (discardArchive) Sync() error { return nil }

// exchange is the WARC view of a fetch: the response record's block is
// res.RawResponse, the bytes read from the connection. A Result without
// them (one built by hand, as some tests and embedders do) is archived as
// its parsed head and decoded body (RawResponseHead and Body).
//
// A record has one WARC-Truncated: the capture's own reason first (it is
// about the bytes in the record), then the body's (a body cut at
// MaxBodySize or by a deadline stops the read, and so the capture), then
// the writer's own finding when the bytes end before their framing does
// ("unspecified", see storage.Exchange.Truncated).
func exchange(res *fetch.Result) *storage.Exchange {
	raw, rawTrunc := res.RawResponse, res.RawTruncated
	ex := &storage.Exchange{
		TargetURI:   res.URL,
		Date:        res.FetchedAt,
		RequestHead: res.RawRequest,
		Truncated:   res.Truncated,
	}
	if len(raw) > 0 {
		ex.Response = raw
		if rawTrunc != "" {
			ex.Truncated = rawTrunc
		}
	} else {
		ex.ResponseHead, ex.Body = res.RawResponseHead, res.Body
	}
	if res.RemoteAddr.IsValid() {
		ex.IP = res.RemoteAddr.Addr().String()
	}
	return ex
}
