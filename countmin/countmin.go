package countmin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"sync"

	"github.com/zeebo/xxh3"
)

// Bounds of a sketch's shape, for New and UnmarshalBinary.
const (
	MaxRows  = 16
	MaxWidth = 1 << 26 // 256 MiB a row
)

// Sizing of Estimate: DefaultRows rows, and a row width of a power of two
// at least the expected keys over KeysPerCounter, between MinWidth and
// SizedMaxWidth counters.
const (
	DefaultRows    = 4
	KeysPerCounter = 8
	MinWidth       = 1024
	SizedMaxWidth  = 1 << 22 // 4 rows: 64 MiB
)

// ErrInvalidOptions is wrapped by New's errors for a shape out of bounds.
var ErrInvalidOptions = errors.New("countmin: invalid options")

// Errors of UnmarshalBinary. Every one wraps ErrFormat.
var (
	// ErrFormat is wrapped by every error of UnmarshalBinary: bad magic,
	// unknown version, a shape out of bounds, a wrong length or a
	// checksum that does not match.
	ErrFormat = errors.New("countmin: bad sketch data")
	// ErrVersion: the data is a sketch of a format version this package
	// does not read.
	ErrVersion = fmt.Errorf("%w: unknown version", ErrFormat)
	// ErrChecksum: the CRC-32C does not match; the data is corrupt.
	ErrChecksum = fmt.Errorf("%w: checksum mismatch", ErrFormat)
)

// Estimate returns the shape of a sketch for about expected distinct keys
// (URLs): DefaultRows rows of the power of two at least
// expected/KeysPerCounter counters, within [MinWidth, SizedMaxWidth]. The
// memory is 4·rows·width bytes: 256 KiB for 100,000 keys (4 × 16,384),
// 32 MiB for 10 million, never more than 64 MiB. It is a pure function.
//
// Eight keys a counter looks crowded, but the counts a crawl orders by
// are skewed: most URLs have one or two in-links, and with conservative
// update a popular key's counters are raised only by the keys sharing
// all of them at their minimum. The figures are in docs/BENCHMARKS.md.
func Estimate(expected uint64) (rows, width int) {
	w := uint64(MinWidth)
	if n := expected / KeysPerCounter; n > w {
		w = 1 << bits.Len64(n-1)
	}
	return DefaultRows, int(min(w, SizedMaxWidth))
}

// Options are a sketch's shape. Rows default to DefaultRows; Width is
// required (see Estimate). Seed salts the hash: two sketches count alike
// only with the same seed.
type Options struct {
	Rows  int
	Width int
	Seed  uint64
}

// Sketch is a count-min sketch with conservative update. See the package
// documentation.
type Sketch struct {
	rows, width int
	seed        uint64

	mu     sync.Mutex // protects counts and total
	counts []uint32   // row r is counts[r*width : (r+1)*width]
	total  uint64     // adds
}

// New returns an empty sketch of the given shape.
func New(o Options) (*Sketch, error) {
	if o.Rows == 0 {
		o.Rows = DefaultRows
	}
	if o.Rows < 1 || o.Rows > MaxRows || o.Width < 1 || o.Width > MaxWidth {
		return nil, fmt.Errorf("%w: %d rows of %d counters (want 1 to %d rows of 1 to %d)", ErrInvalidOptions, o.Rows, o.Width, MaxRows, MaxWidth)
	}
	return &Sketch{rows: o.Rows, width: o.Width, seed: o.Seed, counts: make([]uint32, o.Rows*o.Width)}, nil
}

// Rows returns the number of rows, Width the counters in each.
func (s *Sketch) Rows() int { return s.rows }

// Width returns the number of counters in each row.
func (s *Sketch) Width() int { return s.width }

// Bytes returns the memory of the counters.
func (s *Sketch) Bytes() int { return 4 * len(s.counts) }

// Total returns how many adds the sketch has counted (N of the error
// bound).
func (s *Sketch) Total() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// positions fills idx with the key's counter in each row.
func (s *Sketch) positions(key string, idx *[MaxRows]int) {
	h := xxh3.HashString128Seed(key, s.seed)
	s.place(h.Lo, h.Hi, idx)
}

// hashPositions fills idx with the counters of a key given as a 64-bit
// hash: two 64-bit hashes derived from it with the seed.
func (s *Sketch) hashPositions(h uint64, idx *[MaxRows]int) {
	lo := mix64(h ^ s.seed)
	s.place(lo, mix64(lo^golden64), idx)
}

const golden64 = 0x9e3779b97f4a7c15

// HashIndexes sets idx[r], for each of the o.Rows rows, to the index of
// the counter AddHash(h) and CountHash(h) use in row r of a sketch of
// shape o, counting the rows one after the other: row r's counters are
// r·Width to (r+1)·Width-1. It lets a sketch kept elsewhere (a shared one
// in Redis) count as a Sketch of the same shape and seed does. o.Rows
// must be 1 to MaxRows (0 means DefaultRows) and idx at least that long.
func HashIndexes(o Options, h uint64, idx []int) {
	if o.Rows == 0 {
		o.Rows = DefaultRows
	}
	var a [MaxRows]int
	s := Sketch{rows: o.Rows, width: o.Width, seed: o.Seed}
	s.hashPositions(h, &a)
	copy(idx[:o.Rows], a[:o.Rows])
}

// mix64 is the MurmurHash3 64-bit finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// place is double hashing (Kirsch and Mitzenmacher) of two 64-bit hashes,
// mapped onto the width with Lemire's multiply-shift.
func (s *Sketch) place(lo, hi uint64, idx *[MaxRows]int) {
	hi |= 1
	for r := range s.rows {
		g, _ := bits.Mul64(lo+uint64(r)*hi, uint64(s.width))
		idx[r] = r*s.width + int(g)
	}
}

// Add counts one more occurrence of key and returns its new estimate.
// Only the key's counters that hold the minimum are raised (conservative
// update, Yan and Cho's H1): the others already count at least as many.
func (s *Sketch) Add(key string) uint32 {
	var idx [MaxRows]int
	s.positions(key, &idx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(&idx)
}

// AddHash is Add for a key given as a 64-bit hash of it (a URL's
// fingerprint): cheaper when the caller has the hash already. A key
// counted with AddHash is read with CountHash; the two key spaces are
// separate.
func (s *Sketch) AddHash(h uint64) uint32 {
	var idx [MaxRows]int
	s.hashPositions(h, &idx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(&idx)
}

// AddHashes calls AddHash for each hash, under one lock, and stores the
// new estimates in out (when out is not nil; it must be as long as hs).
func (s *Sketch) AddHashes(hs []uint64, out []uint32) {
	var idx [MaxRows]int
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range hs {
		s.hashPositions(h, &idx)
		n := s.addLocked(&idx)
		if out != nil {
			out[i] = n
		}
	}
}

func (s *Sketch) addLocked(idx *[MaxRows]int) uint32 {
	m := s.minLocked(idx)
	if m == ^uint32(0) {
		return m // saturated
	}
	for _, i := range idx[:s.rows] {
		if s.counts[i] == m {
			s.counts[i] = m + 1
		}
	}
	s.total++
	return m + 1
}

func (s *Sketch) minLocked(idx *[MaxRows]int) uint32 {
	m := ^uint32(0)
	for _, i := range idx[:s.rows] {
		m = min(m, s.counts[i])
	}
	return m
}

// Count returns the estimate of key's adds: never below the true number.
func (s *Sketch) Count(key string) uint32 {
	var idx [MaxRows]int
	s.positions(key, &idx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minLocked(&idx)
}

// CountHashes sets out[i] to CountHash(hs[i]), under one lock.
func (s *Sketch) CountHashes(hs []uint64, out []uint32) {
	var idx [MaxRows]int
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range hs {
		s.hashPositions(h, &idx)
		out[i] = s.minLocked(&idx)
	}
}

// CountHash returns the estimate of a key added with AddHash.
func (s *Sketch) CountHash(h uint64) uint32 {
	var idx [MaxRows]int
	s.hashPositions(h, &idx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minLocked(&idx)
}

// The binary format, all integers little-endian:
//
//	magic "LCCM" | version u16 (1) | rows u32 | width u32 | seed u64 |
//	total u64 | rows·width counters u32 | CRC-32C of all before u32
const (
	formatVersion = 1
	headerSize    = 4 + 2 + 4 + 4 + 8 + 8
)

var (
	magic      = []byte("LCCM")
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// MarshalBinary encodes the sketch.
func (s *Sketch) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, headerSize+4*len(s.counts)+4)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, formatVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(s.rows))
	b = binary.LittleEndian.AppendUint32(b, uint32(s.width))
	b = binary.LittleEndian.AppendUint64(b, s.seed)
	s.mu.Lock()
	b = binary.LittleEndian.AppendUint64(b, s.total)
	for _, c := range s.counts {
		b = binary.LittleEndian.AppendUint32(b, c)
	}
	s.mu.Unlock()
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// UnmarshalBinary replaces s with the sketch b encodes. On error s is
// unchanged. It allocates no more than len(b) bytes of counters. Unlike
// the other methods it must not run concurrently with any other: decode
// into a new Sketch.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	if len(b) < headerSize+4 || !bytes.Equal(b[:4], magic) {
		return fmt.Errorf("%w: not a count-min sketch (%d bytes)", ErrFormat, len(b))
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != formatVersion {
		return fmt.Errorf("%w %d (want %d)", ErrVersion, v, formatVersion)
	}
	rows := binary.LittleEndian.Uint32(b[6:])
	width := binary.LittleEndian.Uint32(b[10:])
	if rows < 1 || rows > MaxRows || width < 1 || width > MaxWidth {
		return fmt.Errorf("%w: %d rows of %d counters out of bounds", ErrFormat, rows, width)
	}
	n := int(rows) * int(width)
	if want := headerSize + 4*n + 4; len(b) != want {
		return fmt.Errorf("%w: %d bytes for %d rows of %d counters (want %d)", ErrFormat, len(b), rows, width, want)
	}
	body := b[:len(b)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return fmt.Errorf("%w: computed %08x, stored %08x", ErrChecksum, got, want)
	}
	counts := make([]uint32, n)
	for i := range counts {
		counts[i] = binary.LittleEndian.Uint32(b[headerSize+4*i:])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows, s.width = int(rows), int(width)
	s.seed = binary.LittleEndian.Uint64(b[14:])
	s.total = binary.LittleEndian.Uint64(b[22:])
	s.counts = counts
	return nil
}
