package storage

// writebackChunk is how many bytes an append-only file (a WARC file, the
// crawl log) takes before its writer asks the kernel to start writing them
// to disk (RocksDB's bytes_per_sync, pebble's BytesPerSync).
const writebackChunk = 1 << 20

// writeback tracks an append-only file's growth and tells its writer when
// to start the writing back of its pages, one writebackChunk at a time,
// without waiting for it (startWriteback). The fsync that makes the file
// durable (a checkpoint, Close) then has little left to write: without
// this, a crawl shorter than the kernel's 30 s of dirty-page expiry left
// the whole of its WARC (68 MB on the three documentation sites of
// docs/bench-realsites.sh) to the fsync of its close, about 0.1 s of its
// wall time. The zero value is ready for a file written from its start.
type writeback struct {
	started int64 // the file's bytes before this offset are under writeback
}

// wrote records that the file is now size bytes long, and returns the
// range whose writeback is due (n is 0 when none is): the caller passes it
// to startWriteback, outside its lock if it likes.
func (wb *writeback) wrote(size int64) (off, n int64) {
	if size < wb.started { // cut back after a failed write
		wb.started = size
	}
	if size-wb.started < writebackChunk {
		return 0, 0
	}
	off, n = wb.started, size-wb.started
	wb.started = size
	return off, n
}

// startWriteback starts writing f's dirty pages in [off, off+n) to disk.
// An error is no loss: the pages stay dirty, and the fsync reports what is
// wrong with the file. It is a variable for the tests.
var startWriteback = startWritebackOS
