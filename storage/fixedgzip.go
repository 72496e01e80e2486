package storage

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
)

// This file holds a small deflate encoder for WARC records of a few
// kilobytes, the common case of a crawl (request records, redirects, error
// pages, small pages). A general encoder builds a dynamic Huffman table for
// every gzip member, and for a member of under 1 KiB that costs more than
// finding the matches: in the crawl of docs/BENCHMARKS.md it was 60% of the
// compression time, and compression a quarter of the crawler's CPU. This
// encoder writes ONE deflate block with the fixed Huffman codes of RFC 1951
// section 3.2.6, so no table is built or stored, after a greedy LZ77 pass
// with a single-entry hash table. On small records the output is about 14%
// larger than with a dynamic table (zlib's Z_FIXED strategy against its
// default, measured on the records of that crawl); on large ones the
// general encoder is used, where the table pays for itself.

// fixedGzipMax is the largest input appendFixedGzip takes (every
// distance then fits deflate's 32 KiB window).
const fixedGzipMax = 16 << 10

// fixedGzipRecords is the largest record (uncompressed) that WARCWriter
// compresses with appendFixedGzip at GzipLevel BestSpeed; larger ones go
// to klauspost/compress's level 1. Measured on Debian Handbook pages cut
// to each size (docs/BENCHMARKS.md): up to 6 KiB the fixed codes are the
// faster (452 against 367 MB/s at 6 KiB, 2.5x at 1 KiB) for output about
// 18% larger; from 7 KiB klauspost v1.20's level 1 is both faster and
// smaller (8 KiB: 370 against 263 MB/s, ratio 0.371 against 0.438).
const fixedGzipRecords = 6 << 10

const (
	lzMinMatch    = 4 // shortest match looked for (deflate allows 3)
	lzMaxMatch    = 258
	lzMaxDistance = 32768
	lzMaxHashBits = 14
)

// Deflate's length and distance codes (RFC 1951 section 3.2.5).
var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// fixedCode is a Huffman code ready for an LSB-first bit stream: deflate
// sends Huffman codes most significant bit first, so they are stored
// bit-reversed.
type fixedCode struct {
	bits uint16
	n    uint8
}

// fixedTables holds the fixed literal/length codes (0-287), the fixed
// distance codes (0-29, five bits each) and, for every match length 3-258
// and distance, which code carries it.
type fixedTables struct {
	lit      [288]fixedCode
	dist     [30]fixedCode
	lenCode  [lzMaxMatch + 1]uint8 // length -> index into lengthBase
	distCode [512]uint8            // see distIndex
}

var fixed = newFixedTables()

func newFixedTables() *fixedTables {
	t := new(fixedTables)
	code := func(v uint16, n uint8) fixedCode {
		return fixedCode{bits.Reverse16(v) >> (16 - n), n}
	}
	for v := 0; v < 288; v++ {
		switch {
		case v < 144:
			t.lit[v] = code(uint16(0x30+v), 8)
		case v < 256:
			t.lit[v] = code(uint16(0x190+v-144), 9)
		case v < 280:
			t.lit[v] = code(uint16(v-256), 7)
		default:
			t.lit[v] = code(uint16(0xc0+v-280), 8)
		}
	}
	for d := range t.dist {
		t.dist[d] = code(uint16(d), 5)
	}
	// In increasing order, so that 258 ends up with its own code 285
	// rather than as code 284 with all extra bits set.
	for c := range lengthBase {
		for l := int(lengthBase[c]); l < int(lengthBase[c])+1<<lengthExtra[c] && l <= lzMaxMatch; l++ {
			t.lenCode[l] = uint8(c)
		}
	}
	// distCode covers distances 1-256 directly (index d-1) and larger
	// ones by their top bits (index 256 + (d-1)>>7), as zlib does.
	for c := range distBase {
		lo, hi := int(distBase[c]), int(distBase[c])+1<<distExtra[c]-1
		for d := lo; d <= hi; d++ {
			t.distCode[distIndex(d)] = uint8(c)
		}
	}
	return t
}

func distIndex(d int) int {
	if d <= 256 {
		return d - 1
	}
	return 256 + (d-1)>>7
}

// bitWriter appends an LSB-first bit stream to a byte slice.
type bitWriter struct {
	out []byte
	acc uint64
	n   uint
}

func (w *bitWriter) write(v uint64, n uint) {
	w.acc |= v << w.n
	w.n += n
	if w.n >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.acc))
		w.acc >>= 32
		w.n -= 32
	}
}

func (w *bitWriter) flush() {
	for w.n > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.n = max(w.n, 8) - 8
	}
	w.acc = 0
}

// lzTable is the match finder's hash table: 1 + the last position seen
// for each hash of four bytes (0: none). It is reused between records.
type lzTable [1 << lzMaxHashBits]int32

// appendFixedGzip appends to dst one gzip member (RFC 1952) holding src
// compressed as a single deflate block with fixed Huffman codes, and
// returns the extended slice. src must be at most fixedGzipMax bytes so
// that every distance fits deflate's 32 KiB window. t is scratch space.
func appendFixedGzip(dst, src []byte, t *lzTable) []byte {
	// Header: magic, CM=deflate, no flags, no mtime, XFL=4 (fastest
	// algorithm), OS=255 (unknown), as Go's compressors write it.
	dst = append(dst, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255)
	w := bitWriter{out: dst}
	w.write(1, 1) // BFINAL
	w.write(1, 2) // BTYPE 01: fixed Huffman codes

	// A table sized to the input: clearing it is most of the cost of a
	// tiny record otherwise.
	hashBits := min(max(bits.Len(uint(len(src))), 8), lzMaxHashBits)
	tab := t[:1<<hashBits]
	clear(tab)
	shift := 32 - hashBits
	hash := func(i int) uint32 {
		return (binary.LittleEndian.Uint32(src[i:]) * 0x1e35a7bd) >> shift
	}
	lit := func(b byte) {
		c := fixed.lit[b]
		w.write(uint64(c.bits), uint(c.n))
	}
	i, last := 0, len(src)-lzMinMatch // last position a match can start at
	for i <= last {
		h := hash(i)
		cand := int(tab[h]) - 1
		tab[h] = int32(i + 1)
		if cand < 0 || i-cand > lzMaxDistance ||
			binary.LittleEndian.Uint32(src[cand:]) != binary.LittleEndian.Uint32(src[i:]) {
			lit(src[i])
			i++
			continue
		}
		n := lzMinMatch
		for limit := min(len(src)-i, lzMaxMatch); n < limit && src[cand+n] == src[i+n]; n++ {
		}
		// Length: literal/length code, then its extra bits.
		lc := fixed.lenCode[n]
		c := fixed.lit[257+int(lc)]
		w.write(uint64(c.bits), uint(c.n))
		if e := lengthExtra[lc]; e > 0 {
			w.write(uint64(n-int(lengthBase[lc])), uint(e))
		}
		// Distance: five-bit code, then its extra bits.
		d := i - cand
		dc := fixed.distCode[distIndex(d)]
		c = fixed.dist[dc]
		w.write(uint64(c.bits), uint(c.n))
		if e := distExtra[dc]; e > 0 {
			w.write(uint64(d-int(distBase[dc])), uint(e))
		}
		// Index the positions inside the match, so that a repeat of
		// them is found later.
		end := i + n
		for i++; i < end && i <= last; i++ {
			tab[hash(i)] = int32(i + 1)
		}
		i = end
	}
	for ; i < len(src); i++ {
		lit(src[i])
	}
	c := fixed.lit[256] // end of block
	w.write(uint64(c.bits), uint(c.n))
	w.flush()
	dst = binary.LittleEndian.AppendUint32(w.out, crc32.ChecksumIEEE(src))
	return binary.LittleEndian.AppendUint32(dst, uint32(len(src)))
}
