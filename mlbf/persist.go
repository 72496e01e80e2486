package mlbf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The binary format (versions 1 and 2), all integers little-endian:
//
//	header:  magic "MLBF" | version u16 | kind u8 (1 filter, 2 classic) |
//	         mode u8 | hash id u32 | layers L u32 | hashes k u32 |
//	         count u32 (L+1 for a filter, 1 for a classic filter) |
//	         version 2 only: salt u64 (Options.Salt, improved mode) |
//	         count × layer size in bits u64 | CRC-32C of the header u32
//	layers:  for each layer: ceil(bits/64) words u64 | CRC-32C of them u32
//
// A filter with salt 0 is written in version 1, byte for byte as before
// salts existed, and a version 1 file reads as salt 0.
// Filter and Concurrent write the same format and read each other's files.
// A reader never allocates more than about twice the bytes it has actually
// read, so a hostile header cannot make it allocate huge amounts of memory.

const (
	formatVersion = 1
	// formatSalted is the version of a file with a salt.
	formatSalted = 2
	kindFilter   = 1
	kindClassic  = 2
	// hashIDCode is HashID's code in the format.
	hashIDCode   = 1
	headerFixed  = 4 + 2 + 1 + 1 + 4 + 4 + 4 + 4
	ioChunkWords = 8192 // 64 KiB per read or write
)

var magic = [4]byte{'M', 'L', 'B', 'F'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFormat is wrapped by the errors ReadFrom and UnmarshalBinary return for
// data that is not a filter this package can read: bad magic, unknown
// version, kind or hash identity, bad parameters or truncation (then also
// wrapping io.ErrUnexpectedEOF).
var ErrFormat = errors.New("mlbf: bad filter data")

// ErrChecksum is wrapped by the error ReadFrom returns when a section's
// CRC-32C does not match: the data is corrupt.
var ErrChecksum = errors.New("mlbf: checksum mismatch")

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeFilter writes the format for a core with the given kind and words.
func writeFilter(w io.Writer, kind uint8, c *core, words []uint64) (int64, error) {
	cw := &countWriter{w: w}
	hdr := make([]byte, 0, headerFixed+8+8*len(c.layers)+4)
	hdr = append(hdr, magic[:]...)
	version := uint16(formatVersion)
	if c.salt != 0 {
		version = formatSalted
	}
	hdr = binary.LittleEndian.AppendUint16(hdr, version)
	hdr = append(hdr, kind, uint8(c.mode))
	hdr = binary.LittleEndian.AppendUint32(hdr, hashIDCode)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(c.L))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(c.k))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(c.layers)))
	if c.salt != 0 {
		hdr = binary.LittleEndian.AppendUint64(hdr, c.salt)
	}
	for _, l := range c.layers {
		hdr = binary.LittleEndian.AppendUint64(hdr, l.bits)
	}
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32.Checksum(hdr, castagnoli))
	if _, err := cw.Write(hdr); err != nil {
		return cw.n, fmt.Errorf("mlbf: write header: %w", err)
	}
	buf := make([]byte, 8*min(len(words), ioChunkWords))
	for i, l := range c.layers {
		ws := words[l.off : l.off+(l.bits+63)/64]
		crc := uint32(0)
		for len(ws) > 0 {
			n := min(len(ws), ioChunkWords)
			b := buf[:8*n]
			for j, v := range ws[:n] {
				binary.LittleEndian.PutUint64(b[8*j:], v)
			}
			crc = crc32.Update(crc, castagnoli, b)
			if _, err := cw.Write(b); err != nil {
				return cw.n, fmt.Errorf("mlbf: write layer %d: %w", i+1, err)
			}
			ws = ws[n:]
		}
		if _, err := cw.Write(binary.LittleEndian.AppendUint32(nil, crc)); err != nil {
			return cw.n, fmt.Errorf("mlbf: write layer %d: %w", i+1, err)
		}
	}
	return cw.n, nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) full(p []byte) error {
	n, err := io.ReadFull(c.r, p)
	c.n += int64(n)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated: %w", ErrFormat, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return fmt.Errorf("mlbf: read: %w", err)
	}
	return nil
}

// readFilter reads the format, checking it describes a filter of the given
// kind, and returns the core with its words.
func readFilter(r io.Reader, kind uint8) (*core, int64, error) {
	cr := &countReader{r: r}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrFormat}, a...)...)
	}
	fixed := make([]byte, headerFixed)
	if err := cr.full(fixed); err != nil {
		return nil, cr.n, err
	}
	if !bytes.Equal(fixed[:4], magic[:]) {
		return nil, cr.n, bad("bad magic %q", fixed[:4])
	}
	le := binary.LittleEndian
	version := le.Uint16(fixed[4:])
	if version != formatVersion && version != formatSalted {
		return nil, cr.n, bad("unsupported version %d", version)
	}
	if fixed[6] != kind {
		return nil, cr.n, bad("kind %d, want %d", fixed[6], kind)
	}
	mode := Mode(fixed[7])
	if mode != Improved && mode != Paper {
		return nil, cr.n, bad("unknown mode %d", fixed[7])
	}
	if id := le.Uint32(fixed[8:]); id != hashIDCode {
		return nil, cr.n, bad("unknown hash identity %d (this package reads %d, %s)", id, hashIDCode, HashID)
	}
	L, k, count := le.Uint32(fixed[12:]), le.Uint32(fixed[16:]), le.Uint32(fixed[20:])
	switch {
	case kind == kindFilter && (L < 1 || L > MaxLayers || count != L+1):
		return nil, cr.n, bad("layers %d, sizes %d", L, count)
	case kind == kindClassic && (L != 0 || count != 1 || mode != Paper):
		return nil, cr.n, bad("classic filter with layers %d, sizes %d, mode %d", L, count, mode)
	case k < 1 || k > MaxHashes:
		return nil, cr.n, bad("hashes %d", k)
	}
	saltLen := uint32(0)
	if version == formatSalted {
		saltLen = 8
	}
	rest := make([]byte, saltLen+8*count+4)
	if err := cr.full(rest); err != nil {
		return nil, cr.n, err
	}
	crc := crc32.Update(crc32.Checksum(fixed, castagnoli), castagnoli, rest[:saltLen+8*count])
	if got := le.Uint32(rest[saltLen+8*count:]); got != crc {
		return nil, cr.n, fmt.Errorf("%w: header", ErrChecksum)
	}
	var salt uint64
	if saltLen > 0 {
		salt = le.Uint64(rest)
		rest = rest[saltLen:]
		if salt == 0 || mode != Improved {
			return nil, cr.n, bad("version %d with salt %#x in mode %d", version, salt, mode)
		}
	}
	sizes := make([]uint64, count)
	for i := range sizes {
		b := le.Uint64(rest[8*i:])
		if b < 1 || b > MaxBits || (mode == Improved && b%blockBits != 0) {
			return nil, cr.n, bad("layer %d size %d", i+1, b)
		}
		sizes[i] = b
	}
	c, total := newShape(mode, int(L), int(k), sizes)
	c.salt = salt
	// Grow the word array as data arrives rather than trusting the header.
	words := alignedWords(min(total, ioChunkWords))
	buf := make([]byte, 8*min(total, ioChunkWords))
	crcBuf := make([]byte, 4)
	for i, l := range c.layers {
		end := l.off + (l.bits+63)/64
		crc := uint32(0)
		for at := l.off; at < end; {
			if at == uint64(len(words)) {
				nw := alignedWords(min(total, 2*uint64(len(words))))
				copy(nw, words)
				words = nw
			}
			n := min(end-at, uint64(len(words))-at, ioChunkWords)
			b := buf[:8*n]
			if err := cr.full(b); err != nil {
				return nil, cr.n, err
			}
			crc = crc32.Update(crc, castagnoli, b)
			for j := range n {
				words[at+j] = le.Uint64(b[8*j:])
			}
			at += n
		}
		if err := cr.full(crcBuf); err != nil {
			return nil, cr.n, err
		}
		if le.Uint32(crcBuf) != crc {
			return nil, cr.n, fmt.Errorf("%w: layer %d", ErrChecksum, i+1)
		}
		if tail := l.bits % 64; tail != 0 && words[end-1]>>tail != 0 {
			return nil, cr.n, bad("layer %d has bits set beyond its size", i+1)
		}
	}
	c.words = words
	return c, cr.n, nil
}

// WriteTo writes the filter in the package's binary format.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	return writeFilter(w, kindFilter, f.c, f.c.words)
}

// ReadFrom replaces f with a filter read from r (written by Filter or
// Concurrent). It reads exactly the filter's bytes. On error f is
// unchanged; the error wraps ErrFormat or ErrChecksum for bad data.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	c, n, err := readFilter(r, kindFilter)
	if err != nil {
		return n, err
	}
	f.c = c
	return n, nil
}

// MarshalBinary returns WriteTo's bytes.
func (f *Filter) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	_, err := f.WriteTo(&b)
	return b.Bytes(), err
}

// UnmarshalBinary replaces f with the filter in data, which must hold
// nothing else.
func (f *Filter) UnmarshalBinary(data []byte) error {
	return unmarshal(data, f.ReadFrom)
}

func unmarshal(data []byte, readFrom func(io.Reader) (int64, error)) error {
	r := bytes.NewReader(data)
	if _, err := readFrom(r); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrFormat, r.Len())
	}
	return nil
}

// WriteTo writes a consistent snapshot of the filter: every TestAndAdd or
// Add either completed before the snapshot or is not in it. Inserts wait
// while the bits are copied (not while they are written).
func (f *Concurrent) WriteTo(w io.Writer) (int64, error) {
	return writeFilter(w, kindFilter, f.c, f.snapshot())
}

// Snapshot returns a consistent copy of the filter, to be written later
// with its WriteTo in the format Concurrent.WriteTo writes. Inserts wait
// only while the bits are copied in memory (one copy, the size of the
// filter: TotalBits/8 bytes); the write that follows, however slow the
// disk, runs beside them. A crawl's checkpoint takes the Snapshot under its
// barrier and writes it afterwards.
func (f *Concurrent) Snapshot() *Snapshot {
	return f.PrepareSnapshot().Capture()
}

// PrepareSnapshot allocates the memory of a snapshot of f, and touches
// it, without holding inserts; Capture fills it. A caller that holds
// inserts itself while it captures (a crawl's checkpoint barrier) calls
// PrepareSnapshot before it takes its barrier, so that the barrier lasts
// only for the copy: the first writes to a fresh allocation of a large
// filter cost far more than the copy.
func (f *Concurrent) PrepareSnapshot() *Snapshot {
	return &Snapshot{f: f, words: touched(len(f.c.words))}
}

// Snapshot is a copy of a Concurrent filter taken by Concurrent.Snapshot,
// or prepared by PrepareSnapshot and taken by Capture.
type Snapshot struct {
	f     *Concurrent
	c     *core
	words []uint64
}

// Capture copies the bits of the filter s was prepared from into s, with
// inserts held for the copy alone, and returns s. Capturing again
// replaces the copy.
func (s *Snapshot) Capture() *Snapshot {
	s.c = s.f.c
	if len(s.words) != len(s.c.words) {
		s.words = touched(len(s.c.words))
	}
	s.f.copyWords(s.words)
	return s
}

// WriteTo writes the snapshot in the format of Concurrent.WriteTo: a
// Concurrent's ReadFrom reads it back. It may be called more than once;
// a prepared snapshot must be captured first.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	if s.c == nil {
		return 0, errors.New("mlbf: Snapshot.WriteTo before Capture")
	}
	return writeFilter(w, kindFilter, s.c, s.words)
}

// ReadFrom replaces f with a filter read from r. It must not run
// concurrently with other methods of f.
func (f *Concurrent) ReadFrom(r io.Reader) (int64, error) {
	c, n, err := readFilter(r, kindFilter)
	if err != nil {
		return n, err
	}
	f.c = c
	if f.stripes == nil {
		f.stripes = make([]stripe, stripes)
	}
	return n, nil
}

// MarshalBinary returns WriteTo's bytes.
func (f *Concurrent) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	_, err := f.WriteTo(&b)
	return b.Bytes(), err
}

// UnmarshalBinary replaces f with the filter in data. It must not run
// concurrently with other methods of f.
func (f *Concurrent) UnmarshalBinary(data []byte) error {
	return unmarshal(data, f.ReadFrom)
}

// WriteTo writes the classic filter in the package's binary format.
func (c *Classic) WriteTo(w io.Writer) (int64, error) {
	return writeFilter(w, kindClassic, c.asCore(), c.words)
}

// ReadFrom replaces c with a classic filter read from r.
func (c *Classic) ReadFrom(r io.Reader) (int64, error) {
	cc, n, err := readFilter(r, kindClassic)
	if err != nil {
		return n, err
	}
	c.m, c.k, c.words = cc.layers[0].bits, cc.k, cc.words
	return n, nil
}

// MarshalBinary returns WriteTo's bytes.
func (c *Classic) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	_, err := c.WriteTo(&b)
	return b.Bytes(), err
}

// UnmarshalBinary replaces c with the classic filter in data.
func (c *Classic) UnmarshalBinary(data []byte) error {
	return unmarshal(data, c.ReadFrom)
}
