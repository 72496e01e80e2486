package neardup

import (
	"bufio"
	"bytes"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math/bits"
	"slices"
	"sync"
)

// Errors of the package, matched with errors.Is.
var (
	// ErrInvalidOptions is wrapped by every Options validation error.
	ErrInvalidOptions = errors.New("neardup: invalid options")
	// ErrFormat is wrapped by every error of UnmarshalBinary about
	// input that is not an index of the right kind.
	ErrFormat = errors.New("neardup: bad index format")
)

// Doc is a document as the indexes see it: its visible text (VisibleText)
// and the set of its shingles (Shingles of that text). The byte-oriented
// SDHash reads Text; the others read Shingles.
type Doc struct {
	Text     string
	Shingles []uint64 // sorted, without repeats
}

// NewDoc extracts the visible text of an HTML page and shingles it with
// the default width.
func NewDoc(page []byte) *Doc {
	text := VisibleText(page)
	return &Doc{Text: text, Shingles: Shingles(text, 0)}
}

// Match is a document of an index that a query resembles.
type Match struct {
	ID uint64
	// Resemblance is the index's estimate of the Jaccard resemblance of
	// the two shingle sets (SDHash: its similarity score, in the same
	// range).
	Resemblance float64
}

// Index finds, among the documents added to it, those resembling a
// query. Implementations are not safe for concurrent use (see Set).
//
// The indexes of this package keep neither d nor its slices once Add or
// Query returns, so that a caller may reuse them (the crawler's pooled
// Shinglers); TestIndexesKeepNoShingles checks each.
type Index interface {
	// Add indexes d under id. Adding a document with no shingles adds
	// nothing.
	Add(id uint64, d *Doc)
	// Query returns the documents whose estimated resemblance to d is at
	// least min, the most similar first.
	Query(d *Doc, min float64) []Match
	// Len returns the number of documents added.
	Len() int
	// SizeBytes returns the memory the index's digests take, without
	// allocator or map overhead: the figure compared per page.
	SizeBytes() int
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Set is an Index safe for concurrent use, with the check-and-insert of a
// crawl as one call.
type Set struct {
	mu  sync.Mutex // protects idx
	idx Index
}

// NewSet wraps idx, which the caller must no longer use directly.
func NewSet(idx Index) *Set { return &Set{idx: idx} }

// TestAndAdd returns the documents added before that d resembles at
// least min, and adds d under id, in one atomic step.
func (s *Set) TestAndAdd(id uint64, d *Doc, min float64) []Match {
	if p, ok := s.idx.(preparer); ok {
		dig := p.prepare(d)
		s.mu.Lock()
		defer s.mu.Unlock()
		return p.testAndAddPrepared(id, dig, min)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.idx.Query(d, min)
	s.idx.Add(id, d)
	return m
}

// Query returns the documents added that d resembles at least min.
func (s *Set) Query(d *Doc, min float64) []Match {
	if p, ok := s.idx.(preparer); ok {
		dig := p.prepare(d)
		s.mu.Lock()
		defer s.mu.Unlock()
		return p.queryPrepared(dig, min)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.Query(d, min)
}

// preparer is an Index whose digest of a document (the costly part of a
// check) needs no lock: Set computes it before taking its own.
type preparer interface {
	prepare(d *Doc) any
	testAndAddPrepared(id uint64, digest any, min float64) []Match
	queryPrepared(digest any, min float64) []Match
}

// Decode returns the index a snapshot (an Index's MarshalBinary) holds,
// of whatever kind it is.
func Decode(data []byte) (Index, error) {
	if len(data) < len(formatMagic)+2 || string(data[:4]) != formatMagic {
		return nil, fmt.Errorf("%w: not a neardup index", ErrFormat)
	}
	var idx Index
	switch data[4] {
	case kindPMBF:
		idx = &PMBF{}
	case kindSliced:
		idx = &Sliced{}
	case kindSDHash:
		idx = NewSDHash()
	case kindSimHash:
		idx = NewSimHash()
	case kindMinHash, kindMinHashOPH:
		idx = &MinHash{opts: MinHashOptions{OnePermutation: data[4] == kindMinHashOPH}}
	default:
		return nil, fmt.Errorf("%w: unknown index kind %d", ErrFormat, data[4])
	}
	if err := idx.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	return idx, nil
}

// Len returns the number of documents added.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.Len()
}

// SizeBytes returns the memory of the index's digests.
func (s *Set) SizeBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.SizeBytes()
}

// MarshalBinary snapshots the index.
func (s *Set) MarshalBinary() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.MarshalBinary()
}

// Snapshot returns the index as it is now, to be written (in the format
// of MarshalBinary) while documents are still added. For a MinHash, whose
// ids and signatures are append-only, it takes the lock only to note
// their length and writes from the index's own memory, with no copy;
// other kinds are encoded under the lock.
func (s *Set) Snapshot() (io.WriterTo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.idx.(*MinHash); ok {
		return m.view(), nil
	}
	b, err := s.idx.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// UnmarshalBinary replaces the index's contents with a snapshot's.
func (s *Set) UnmarshalBinary(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.UnmarshalBinary(b)
}

// sortMatches orders matches most similar first, then by ID.
func sortMatches(m []Match) []Match {
	slices.SortFunc(m, func(a, b Match) int {
		switch {
		case a.Resemblance > b.Resemblance:
			return -1
		case a.Resemblance < b.Resemblance:
			return 1
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return m
}

// The binary format shared by the indexes: magic "LCND", a kind byte, a
// version byte, the kind's body, and the CRC-32C of everything before it.
const (
	formatMagic   = "LCND"
	formatVersion = 1
	kindPMBF      = 1
	kindSliced    = 2
	kindSDHash    = 3
	kindSimHash   = 4
	kindMinHash   = 5
	// kindMinHashOPH is MinHash with OnePermutation: the same body.
	kindMinHashOPH = 6
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encoder appends the fields of a format body.
type encoder struct{ b []byte }

func newEncoder(kind byte) *encoder {
	return &encoder{b: append([]byte(formatMagic), kind, formatVersion)}
}
func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) u64(v uint64)     { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) u32(v uint32)     { e.b = binary.LittleEndian.AppendUint32(e.b, v) }

// streamEncoder writes a format body as it goes, with the checksum last:
// the bytes of an encoder's finish, without holding them.
type streamEncoder struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	buf [binary.MaxVarintLen64]byte
	err error
}

func newStreamEncoder(w io.Writer, kind byte) *streamEncoder {
	e := &streamEncoder{w: bufio.NewWriterSize(w, 1<<16), crc: crc32.New(castagnoli)}
	e.write(append([]byte(formatMagic), kind, formatVersion))
	return e
}

func (e *streamEncoder) write(b []byte) {
	if e.err != nil {
		return
	}
	e.crc.Write(b)
	n, err := e.w.Write(b)
	e.n += int64(n)
	e.err = err
}
func (e *streamEncoder) uvarint(v uint64) { e.write(binary.AppendUvarint(e.buf[:0], v)) }

// finish writes the checksum and flushes, returning the bytes written.
func (e *streamEncoder) finish() (int64, error) {
	if e.err == nil {
		sum := binary.LittleEndian.AppendUint32(e.buf[:0], e.crc.Sum32())
		n, err := e.w.Write(sum)
		e.n += int64(n)
		e.err = err
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.n, e.err
}

func (e *encoder) finish() []byte {
	return binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
}

// decoder reads a format body; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func newDecoder(data []byte, kind byte, name string) (*decoder, error) {
	if len(data) < len(formatMagic)+2+4 || string(data[:4]) != formatMagic {
		return nil, fmt.Errorf("%w: not a neardup index", ErrFormat)
	}
	if data[4] != kind {
		return nil, fmt.Errorf("%w: index kind %d, want %d (%s)", ErrFormat, data[4], kind, name)
	}
	if data[5] != formatVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrFormat, data[5], formatVersion)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrFormat)
	}
	return &decoder{b: body[6:]}, nil
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length that must fit in what remains, each element
// taking at least size bytes.
func (d *decoder) count(size int) int {
	v := d.uvarint()
	if d.err == nil && v > uint64(len(d.b)/max(size, 1)) {
		d.fail("count %d exceeds the %d bytes left", v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *decoder) u64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

// end reports the sticky error, or trailing bytes.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}

// mix64 is a 64-bit finalizer (splitmix64's): it derives independent
// hash values from one shingle hash and a seed.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// popcount returns the set bits of words.
func popcount(words []uint64) int {
	n := 0
	for _, w := range words {
		n += bits.OnesCount64(w)
	}
	return n
}
