package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A sidecar index is the CDXJ lines of one WARC file's response and
// revisit records, written by WARCWriter (WARCOptions.IndexDir) as it
// writes the records, so that IndexWARCs (IndexOptions.SidecarDir) need
// not read the WARC file back and inflate every gzip member to find where
// each ends: 15-19% of a crawl's CPU when it read them all.
//
// Its lines are the ones IndexWARCs would write for the records (the same
// CDXJEntry.fill and AppendLine), in file order, unsorted. When the writer
// closes the WARC file it appends a trailer line
//
//	!layercrawl-sidecar 1 size=SIZE lines=N crc32c=XXXXXXXX
//
// with the WARC file's final size, the number of lines before it and the
// CRC-32C of their bytes. IndexWARCs uses a sidecar only when its trailer
// is there and whole, its size is the WARC file's on disk, its checksum and
// line count match and every line parses, names the WARC file and
// re-formats to itself; otherwise (a crash cut the sidecar or the WARC
// file, a disk error abandoned it, an older or damaged file) it reads the
// WARC file as it always did. A partial sidecar is never trusted.

// CrawlSidecarDir is where a crawl's WARC writer puts its sidecar indexes
// (WARCOptions.IndexDir), relative to the crawl's output directory;
// WriteCrawlIndex reads them. Kept after the index is written: a later
// "crawler index" or the index at the end of a resumed crawl reads them
// again instead of the WARC files; "crawler pack" does not package them.
const CrawlSidecarDir = "indexes/perwarc"

// sidecarExt ends a sidecar's name: <WARC file base name>.cdxj.
const sidecarExt = ".cdxj"

const sidecarMagic = "!layercrawl-sidecar 1 "

// errSidecar means a sidecar index is incomplete or damaged: IndexWARCs
// reads its WARC file instead.
var errSidecar = errors.New("storage: sidecar index incomplete or damaged")

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// sidecar is the open sidecar of a WARC file being written. Its methods
// are called under WARCWriter.mu.
type sidecar struct {
	path  string
	f     *os.File
	bw    *bufio.Writer
	crc   uint32
	lines int64
}

// createSidecar creates the sidecar at path, replacing any file there (a
// writer never reuses a WARC file's name, so one there is stale). It
// returns nil when it cannot: the index then reads the WARC file.
func createSidecar(path string) *sidecar {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil
	}
	return &sidecar{path: path, f: f, bw: bufio.NewWriterSize(f, 64<<10)}
}

// add appends one line (with its newline). On an error the sidecar is
// abandoned and add returns false.
func (s *sidecar) add(line []byte) bool {
	if _, err := s.bw.Write(line); err != nil {
		s.abandon()
		return false
	}
	s.crc = crc32.Update(s.crc, crc32c, line)
	s.lines++
	return true
}

// flush hands the buffered lines to the file (at a WARC Sync); no fsync:
// a sidecar without its trailer is never used, so its durability buys
// nothing until it is finished.
func (s *sidecar) flush() bool {
	if err := s.bw.Flush(); err != nil {
		s.abandon()
		return false
	}
	return true
}

// finish writes the trailer for a WARC file of size bytes, flushes, syncs
// and closes the sidecar; on an error it is removed.
func (s *sidecar) finish(size int64) {
	s.bw.Write(appendSidecarTrailer(nil, size, s.lines, s.crc))
	err := s.bw.Flush()
	if err == nil {
		err = s.f.Sync()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(s.path)
	}
}

// abandon closes and removes the sidecar: its WARC file is indexed by
// reading it.
func (s *sidecar) abandon() {
	s.f.Close()
	os.Remove(s.path)
}

func appendSidecarTrailer(dst []byte, size, lines int64, crc uint32) []byte {
	dst = append(dst, sidecarMagic...)
	dst = append(dst, "size="...)
	dst = strconv.AppendInt(dst, size, 10)
	dst = append(dst, " lines="...)
	dst = strconv.AppendInt(dst, lines, 10)
	dst = append(dst, " crc32c="...)
	dst = fmt.Appendf(dst, "%08x", crc)
	return append(dst, '\n')
}

// scanSidecar reads a sidecar of n bytes from r and checks it against the
// WARC file it indexes (its base name and size on disk), handing each
// index line (with its newline) to emit, if set, as it goes, and returns
// how many. Anything short of a whole, matching sidecar fails with
// errSidecar; so a caller that must not act on a partial sidecar scans it
// once without emit, then again with it (the file is read twice, the
// second time from the page cache, instead of held in memory). With
// verify false the lines are not parsed (the second pass: the checksum,
// count and size still tell a sidecar changed since the first).
func scanSidecar(r io.Reader, n int64, name string, size int64, verify bool, emit func([]byte) error) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var pos, count int64
	var crc uint32
	var buf []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer (a long URL): join it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		pos += int64(len(line))
		if pos == n && err == nil {
			// The last line: the trailer.
			got, lines, want, ok := parseSidecarTrailer(line)
			switch {
			case !ok:
				return 0, fmt.Errorf("%w: %s: no trailer", errSidecar, name)
			case got != size:
				return 0, fmt.Errorf("%w: %s: written for %d bytes, the file has %d", errSidecar, name, got, size)
			case crc != want:
				return 0, fmt.Errorf("%w: %s: checksum mismatch", errSidecar, name)
			case count != lines:
				return 0, fmt.Errorf("%w: %s: %d lines, the trailer says %d", errSidecar, name, count, lines)
			}
			return count, nil
		}
		if err != nil || pos > n {
			return 0, fmt.Errorf("%w: %s: no trailer", errSidecar, name)
		}
		if verify {
			e, err := ParseCDXJLine(line)
			if err != nil {
				return 0, fmt.Errorf("%w: %s: %v", errSidecar, name, err)
			}
			if e.Filename != name || e.Length <= 0 || e.Offset > size-e.Length {
				return 0, fmt.Errorf("%w: %s: line %d names %s at %d+%d", errSidecar, name, count+1, e.Filename, e.Offset, e.Length)
			}
			if buf = e.AppendLine(buf[:0]); !bytes.Equal(buf, line) {
				return 0, fmt.Errorf("%w: %s: line %d is not as IndexWARCs writes it", errSidecar, name, count+1)
			}
		}
		crc = crc32.Update(crc, crc32c, line)
		count++
		if emit != nil {
			if err := emit(line); err != nil {
				return count, err
			}
		}
	}
}

// parseSidecarTrailer parses a trailer line as appendSidecarTrailer
// writes it, and only so.
func parseSidecarTrailer(t []byte) (size, lines int64, crc uint32, ok bool) {
	rest, ok := bytes.CutPrefix(t, []byte(sidecarMagic))
	if !ok {
		return 0, 0, 0, false
	}
	var f [3][]byte
	for i, name := range []string{"size=", "lines=", "crc32c="} {
		var v []byte
		v, rest, _ = bytes.Cut(rest, []byte(" "))
		if f[i], ok = bytes.CutPrefix(v, []byte(name)); !ok {
			return 0, 0, 0, false
		}
	}
	size, err1 := strconv.ParseInt(string(f[0]), 10, 64)
	lines, err2 := strconv.ParseInt(string(f[1]), 10, 64)
	c, err3 := strconv.ParseUint(string(bytes.TrimSuffix(f[2], []byte("\n"))), 16, 32)
	if err1 != nil || err2 != nil || err3 != nil || size < 0 || lines < 0 ||
		!bytes.Equal(t, appendSidecarTrailer(nil, size, lines, uint32(c))) {
		return 0, 0, 0, false
	}
	return size, lines, uint32(c), true
}

// indexSidecar adds the lines of the sidecar in dir of the WARC file at
// path to s, and reports whether it did: false when the file has no
// usable sidecar (then nothing was added).
func indexSidecar(dir, path string, s *sorter) (bool, error) {
	name := filepath.Base(path)
	fi, err := os.Stat(path)
	if err != nil {
		return false, nil
	}
	f, err := os.Open(filepath.Join(dir, name+sidecarExt))
	if err != nil {
		return false, nil
	}
	defer f.Close()
	sfi, err := f.Stat()
	if err != nil {
		return false, nil
	}
	if _, err := scanSidecar(f, sfi.Size(), name, fi.Size(), true, nil); err != nil {
		return false, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, nil
	}
	// Checked whole: now its lines. A sidecar changed in between (a
	// crawl writing to this directory meanwhile) is an error, not a
	// partial index.
	if _, err := scanSidecar(f, sfi.Size(), name, fi.Size(), false, s.add); err != nil {
		return false, fmt.Errorf("storage: index: sidecar of %s changed while read: %w", path, err)
	}
	return true, nil
}

// sidecarEntry returns the index entry of the response or revisit record
// (typ) that WARCWriter is writing, with its block a followed by c, as
// IndexWARCs will read it back (but Offset and Filename, known once it is
// appended), and false when the record might not read back as written
// (then the sidecar is abandoned and the file read). length is the
// record's gzip member's.
func sidecarEntry(typ, uri string, date time.Time, digest string, a, c []byte, headerLen int, length int64) (CDXJEntry, bool) {
	// The reader trims header values (strings.TrimSpace: Unicode spaces
	// too), parses WARC-Date as RFC 3339 (a four-digit year) and refuses
	// headers over maxWARCHeader.
	if y := date.UTC().Year(); y < 0 || y > 9999 || headerLen >= maxWARCHeader ||
		strings.TrimSpace(uri) != uri || strings.TrimSpace(digest) != digest || length <= 0 {
		return CDXJEntry{}, false
	}
	block := a
	if len(c) > 0 && headsEnd(a) != len(a) {
		// The status and media type come from the heads alone; only
		// when a does not hold them whole is the block joined.
		block = append(append(make([]byte, 0, len(a)+len(c)), a...), c...)
	}
	e := CDXJEntry{Length: length}
	e.fill(typ, uri, date, digest, block)
	return e, true
}
