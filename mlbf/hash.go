package mlbf

import (
	"math/bits"

	"github.com/zeebo/xxh3"
)

// HashID names the hashing scheme. It is written into every saved filter,
// and ReadFrom refuses a filter saved with any other scheme, because the bit
// positions of a key would differ. Any change to segment hashing, salting,
// the integrity key, the fold of the tail or the position functions below
// must change this identity; TestGoldenPositions guards it.
const HashID = "xxh3-64+128/km/blk512/v2"

// MaxLayers and MaxHashes bound Options.Layers and Options.Hashes (and the
// values ReadFrom accepts) so that the per-key scratch state lives on the
// stack.
const (
	MaxLayers = 16
	MaxHashes = 32
)

// BlockBits is the size of an improved-mode block, one 64-byte cache
// line: a layer's k probes for a key fall in one block, and improved
// layers are sized in whole blocks (Options.LayerBits are rounded up).
const BlockBits = 512

const (
	blockBits  = BlockBits
	blockWords = blockBits / 64
	golden64   = 0x9e3779b97f4a7c15
)

// keyHash is the hashed form of one key.
type keyHash struct {
	n     int // layers used: min(count, L)
	count int // true number of segments
	// lo, hi: per-layer 128-bit segment hashes; raw in paper mode, salted
	// with the layer number in improved mode.
	lo, hi [MaxLayers]uint64
	// ilo, ihi: the improved integrity key (also picks the lock stripe in
	// both modes).
	ilo, ihi uint64
}

// mix64 is the MurmurHash3 64-bit finalizer: a bijective avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// fastrange maps x uniformly onto [0, n) with one multiplication (Lemire),
// using all 64 bits of x and any n up to 2^64-1.
func fastrange(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// segmentHash is the unsalted 128-bit hash of one segment.
func segmentHash(s string) (lo, hi uint64) {
	h := xxh3.HashString128(s)
	return h.Lo, h.Hi
}

// tailBuf is the longest folded tail that tailHash and tailHash64 join in
// a stack buffer and hash in one call; longer tails go through xxh3's
// streaming hasher, whose state (over 1 KiB) costs more to set up than
// copying a short tail.
const tailBuf = 256

// joinTail writes seg joined with '/' into buf and returns it, or returns
// nil if the joined string is longer than buf.
func joinTail(seg []string, buf *[tailBuf]byte) []byte {
	n := len(seg) - 1
	for _, s := range seg {
		n += len(s)
	}
	if n > tailBuf {
		return nil
	}
	b := buf[:0]
	for i, s := range seg {
		if i > 0 {
			b = append(b, '/')
		}
		b = append(b, s...)
	}
	return b
}

// tailHash hashes seg joined with '/' without allocating the joined
// string: it is exactly xxh3.HashString128(strings.Join(seg, "/")).
func tailHash(seg []string) (lo, hi uint64) {
	var buf [tailBuf]byte
	if b := joinTail(seg, &buf); b != nil {
		sum := xxh3.Hash128(b)
		return sum.Lo, sum.Hi
	}
	var h xxh3.Hasher128
	for i, s := range seg {
		if i > 0 {
			_, _ = h.WriteString("/")
		}
		_, _ = h.WriteString(s)
	}
	sum := h.Sum128()
	return sum.Lo, sum.Hi
}

// tailHash64 is tailHash's 64-bit form: xxh3.HashString of the joined
// segments.
func tailHash64(seg []string) uint64 {
	var buf [tailBuf]byte
	if b := joinTail(seg, &buf); b != nil {
		return xxh3.Hash(b)
	}
	var h xxh3.Hasher
	for i, s := range seg {
		if i > 0 {
			_, _ = h.WriteString("/")
		}
		_, _ = h.WriteString(s)
	}
	return h.Sum64()
}

// hashKey fills kh for the segments seg of a key in a filter of L layers.
// Segments beyond L are folded into layer L as their '/'-joined string.
//
// Paper mode uses the 128-bit xxh3 hash of each segment as (h1, h2).
// Improved mode uses the 64-bit xxh3 hash h of each segment (cheaper for
// short segments, and a URL has several) salted with the layer number and
// the filter's salt (Options.Salt): lo = hi = mix(h ^ salt_i ^ salt); its
// high bits pick the block, its low bits the probes in it. mix is a
// bijection, so a new salt gives every key fresh positions: only two
// segments whose 64-bit xxh3 hashes are equal (2^-64 for a pair) collide
// under every salt. (A seeded xxh3 would do the same at a higher cost: for
// inputs over 240 bytes it derives its 192-byte secret from the seed on
// every call.) Salt 0 is the unsalted filter of HashID.
func hashKey(seg []string, L int, improved bool, salt uint64, kh *keyHash) {
	kh.count = len(seg)
	n := len(seg)
	if n > L {
		n = L
	}
	kh.n = n
	if !improved {
		for i := 0; i < n; i++ {
			if i == L-1 && len(seg) > L {
				kh.lo[i], kh.hi[i] = tailHash(seg[i:])
			} else {
				kh.lo[i], kh.hi[i] = segmentHash(seg[i])
			}
		}
		// The paper's integrity key is the XOR of positions (computed by the
		// caller); this chain only picks the lock stripe.
		a := uint64(kh.count)
		for i := 0; i < n; i++ {
			a = mix64(a ^ kh.lo[i])
		}
		kh.ilo, kh.ihi = a, a
		return
	}
	// Integrity key: a sequential chain over the full 64-bit salted hashes
	// of all used layers, started from the true segment count: each step
	// rotates, XORs in the next hash and multiplies by an odd constant (a
	// bijection), and the result is re-mixed. Unlike the paper's XOR of
	// positions it is order-sensitive and cannot self-cancel (the same
	// segment has a different salted hash at each depth).
	a := uint64(kh.count)*golden64 ^ 0x243f6a8885a308d3
	for i := 0; i < n; i++ {
		var h uint64
		if i == L-1 && len(seg) > L {
			h = tailHash64(seg[i:])
		} else {
			h = xxh3.HashString(seg[i])
		}
		lo := mix64(h ^ uint64(i+1)*golden64 ^ salt)
		// fastrange picks the block from the high bits of lo; blockBit
		// takes the first three probes from its low 27 bits.
		kh.lo[i], kh.hi[i] = lo, lo
		a = (bits.RotateLeft64(a, 29) ^ lo) * 0x9fb21c651e98df25
	}
	kh.ilo = mix64(a)
	kh.ihi = kh.ilo
}

// blockBit returns the j-th bit position (0..511) inside a block for the
// position hash hi: probes 0..2 are the low three 9-bit slices of hi (bits
// 0..26, disjoint from the high bits fastrange uses to pick the block, for
// any layer up to 2^40 bits); each further group of three comes from a
// re-mix of hi.
func blockBit(hi uint64, j int) uint64 {
	x := hi
	if j >= 3 {
		x = mix64(hi + uint64(j/3)*golden64)
	}
	return (x >> (9 * uint(j%3))) & (blockBits - 1)
}

// blockProbes writes the k probe positions of hash hi into p and returns
// p[:k]: exactly blockBit(hi, j) for j < k, with one re-mix per group of
// three instead of one per probe.
func blockProbes(hi uint64, k int, p *[MaxHashes]uint16) []uint16 {
	x, r, g := hi, uint(0), uint64(0)
	for j := 0; j < k; j++ {
		if r == 3 {
			g++
			x, r = mix64(hi+g*golden64), 0
		}
		p[j] = uint16(x >> (9 * r) & (blockBits - 1))
		r++
	}
	return p[:k]
}

// paperPos is Hash_j(s) mod m of the paper: Kirsch–Mitzenmacher double
// hashing g_j = h1 + j*h2 (mod 2^64), reduced mod m.
func paperPos(lo, hi uint64, j int, m uint64) uint64 {
	return (lo + uint64(j)*hi) % m
}

// classicPos is the j-th probe of the classic filter: Kirsch–Mitzenmacher
// double hashing mapped onto [0, m) with fastrange (64-bit indexes).
func classicPos(lo, hi uint64, j int, m uint64) uint64 {
	return fastrange(lo+uint64(j)*hi, m)
}
