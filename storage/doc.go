// Package storage persists a crawl: an embedded key-value store for the
// frontier, per-host state and filter snapshots; atomic snapshot files; WARC
// 1.1 output; the JSON-lines crawl log; and, after the crawl, a CDXJ index
// of its WARC files and a WACZ package of it.
//
// # Store
//
// Open opens an ordered key-value store in a directory. Get, Write and Ascend
// are safe for concurrent use. Write applies a batch atomically and syncs it
// before returning, so a batch that Write acknowledged survives a crash of
// the process or the machine, and a batch it did not acknowledge is either
// wholly present or wholly absent. With Options.DeferSync, Write returns
// once the batch is written to the operating system (it survives kill -9)
// and the disk flush waits for Sync or Close: after a crash of the machine
// the store reopens at a prefix of the acknowledged batches. A flush per
// batch took most of a fast crawl's time.
//
// Write refuses a batch, writing nothing, when the store's file system has
// less than Options.DiskReserve free (ErrDiskFull, which matches
// syscall.ENOSPC): pebble takes a failed log write for fatal and exits the
// process, so the store stops before the disk is full and stays whole.
//
// The engine is pebble (github.com/cockroachdb/pebble), chosen over bbolt
// (go.etcd.io/bbolt) by replaying the frontier's workload on both (per-host
// FIFO queues q/<host>\x00<seq>, a journal, per-host counters; synced batches
// of 256 entries; popping round-robin from the heads; 2 million URLs): see
// docs/BENCHMARKS.md for the figures and the command. pebble wrote faster,
// popped faster, and used a fraction of bbolt's disk and memory: a B+tree
// file never shrinks after the queue drains, and its memory-mapped pages
// count in the process's RSS, which the frontier must keep bounded. The
// engine is not part of the API; the bbolt adapter lives in a test file, so
// that the comparison can be re-run without linking bbolt into the binary.
//
// A store records its format version. Open never starts afresh over existing
// data: a directory holding something else fails with ErrForeign, damage the
// engine detects fails with ErrCorrupt, a newer format with ErrVersion. An
// engine directory with no key at all (a crash between creating the files and
// writing the format record) is initialised.
//
// # Atomic files
//
// WriteFileAtomic replaces a file so that after any crash it holds the whole
// old or the whole new content: temporary file in the same directory, fsync,
// rename, fsync of the directory. ReadFileAtomic tells a missing file
// (fs.ErrNotExist: a first run) from one that does not decode (ErrCorrupt,
// *CorruptError: report it, do not start afresh).
//
// # WARC
//
// WARCWriter writes WARC 1.1 files of gzip-compressed records (one member per
// record), each file opening with a warcinfo record, then a request and a
// response record per Exchange, rotated by size. It is safe for concurrent
// use. A crash leaves at most the last request/response pair of the last
// file torn; WARCReader returns every whole record before it and then an
// error matching ErrTruncated. A new writer starts a new file rather than
// appending. As a file grows, the writer starts the kernel's writeback of
// each MiB it appended (sync_file_range on Linux; the crawl log does the
// same), so that the fsync of a Sync or Close has little left to write.
// The files are checked with the independent reader warcio.js in the tests.
//
// # What the records hold
//
// A request record's block is Exchange.RequestHead and RequestBody: the
// bytes written to the connection. A response record's block is
// Exchange.Response, the bytes read from it for that exchange: any 1xx
// interim responses, the status line, the header fields in their order,
// case and repetition, and the message body with its transfer coding
// (chunked) and content coding (gzip, br) as sent (WARC 1.1 section 6.3.2).
// Nothing is re-serialised; decoding is for analysis, outside the archive
// (DecodeResponse).
// A revisit record's block is the response's bytes before its payload (the
// interim responses and the head, as received). Exchange.ResponseHead and
// Body are the form for responses not captured from a connection (built
// by a program, converted from another format): their head is normalised
// to end in one blank line, and ResponseHead formats one that matches a
// body stored decoded.
//
// WARC-Block-Digest is the SHA-1 of the block as stored. WARC-Payload-Digest
// is the SHA-1 of the payload: the final response's body with the chunked
// transfer coding removed and the content coding kept, so a gzip'd body is
// hashed gzip'd (ParseResponse says how a response that does not parse, or
// was cut, is read; such a response is archived byte for byte all the
// same). This is WARC 1.1's payload ("the entity-body", section 5.9, as
// iipc/warc-specifications#22 settled it: two responses that differ only in
// their chunking have one payload) and what gowarc computes: it hashes the
// body of net/http.ReadResponse over the record (dialer.go and
// cmd/warc/verify/verify.go at internetarchive/gowarc@ed6ca5a). Other tools
// differ:
//
//   - Heritrix's FetchHTTP digests every byte its RecordingInputStream
//     records after the first blank line (webarchive-commons
//     RecordingOutputStream.markMessageBodyBegin and startDigest,
//     iipc/webarchive-commons@3921259), and HttpResponseRecordBuilder writes
//     that as WARC-Payload-Digest: the content coding is kept, as here, but
//     chunk framing is hashed too (internetarchive/heritrix3#769; #770
//     de-chunks). Its defaults (useHTTP11 false, acceptCompression false)
//     mostly get neither coding, and then the digests agree. FetchHTTP2
//     records a rebuilt HTTP/1.1 message without the transfer coding.
//   - warcio (Python) hashes the bytes after the HTTP head as stored, chunk
//     framing included, when it writes (recordbuilder.py ensure_digest) and
//     when `warcio check` verifies (digestverifyingreader.py,
//     webrecorder/warcio@2a797aa; webrecorder/warcio#74 and #75 are open),
//     and warcio.js 2.4.11 does the same when it serialises
//     (warcserializer.ts digestRecord). `warcio check` therefore reports
//     "payload digest failed" for a chunked response written here, and these
//     digests agree with warcio's only for responses that were not chunked.
//
// A record has one WARC-Truncated. The caller gives the capture's reason in
// Exchange.Truncated; with Response set and no reason given, a response
// that ends before its framing does is written with "unspecified".
//
// # Crawl log
//
// CrawlLog appends one JSON object per line per fetch attempt. It is safe
// for concurrent use and buffered: Flush hands lines to the operating
// system, Sync also fsyncs them, Close does both. A crash can leave a torn
// last line; OpenCrawlLog truncates it away before appending (TornBytes
// reports how much), and ReadCrawlLog skips it.
//
// # Index and WACZ
//
// IndexWARCs writes the CDXJ index of WARC files, one line per response
// and revisit record ("SURT-KEY TIMESTAMP {json}", as pywb and
// ReplayWeb.page read it), sorted by an external merge sort in bounded
// memory (IndexOptions.MemoryLimit); WriteCrawlIndex writes a crawl
// output directory's indexes/index.cdxj. SURT is pywb's key (the Python
// surt package's defaults). The index is built from the WARC files, not
// from the crawl's state: from each file's sidecar index when it is
// complete (WARCOptions.IndexDir: the writer's own lines, with the file's
// final size at close; IndexOptions.SidecarDir), else by reading the file
// (WARCRecord.Length gives each record's gzip member). The two give the
// same lines; a sidecar is never trusted in part.
// PackWACZ packages a crawl output directory as a WACZ 1.1.1 file. Both
// write through WriteFileAtomic: an error or a crash leaves the previous
// file, or none, never a partial one.
//
// # Errors
//
// Errors are prefixed "storage: " and wrap their cause. Sentinels to test
// with errors.Is: ErrNotFound, ErrCorrupt, ErrForeign, ErrVersion,
// ErrClosed, ErrInvalidExchange, ErrTruncated, ErrMalformedResponse,
// ErrCDXJ, ErrNotCrawlDir.
package storage
