package mlbf

// Probe is one bit a key touches: bit Bit of layer Layer (0-based; Layer L
// is the integrity layer). Bits are numbered from 0 within each layer.
type Probe struct {
	Layer int
	Bit   uint64
}

// Layout computes where a key's bits lie in a filter of given options,
// without holding any bits: it is for filters kept elsewhere (a Redis
// bitmap, a file on another machine). It uses exactly the hashing and
// position functions of Filter and Concurrent, so a store that sets every
// probe of every key it is given holds the same bits as an in-memory filter
// of the same options fed the same keys, and answers TestAndAdd the same.
//
// A Layout is immutable and safe for concurrent use.
type Layout struct {
	c *core // geometry only; c.words is nil
}

// NewLayout returns the layout of a filter with the options (copied;
// defaults applied). It fails like New for invalid options.
func NewLayout(opts Options) (*Layout, error) {
	c, _, err := shapeFor(opts)
	if err != nil {
		return nil, err
	}
	return &Layout{c: c}, nil
}

// Mode returns the filter's mode.
func (l *Layout) Mode() Mode { return l.c.mode }

// Layers returns L, the number of segment layers (the integrity layer comes
// on top).
func (l *Layout) Layers() int { return l.c.L }

// Hashes returns k, the probes per layer.
func (l *Layout) Hashes() int { return l.c.k }

// LayerBits returns the size in bits of each layer, the integrity layer
// last; they are the sizes New would give the filter.
func (l *Layout) LayerBits() []uint64 { return l.c.layerBits() }

// MaxProbes is the most probes one key has: (L+1)*k. A dst slice of that
// capacity makes Probes allocation-free.
func (l *Layout) MaxProbes() int { return (l.c.L + 1) * l.c.k }

// Probes appends to dst the probes of the key given as its segments, in the
// order the filter's TestAndAdd visits them (layer by layer, the integrity
// layer last; a key of n < L segments touches layers 0..n-1 and L), and
// returns the extended slice together with the key's route: a 64-bit hash
// of the whole key, independent of the probe positions, for choosing a
// shard when the filter is split into several filters of the same layout.
//
// The key is present in the filter exactly when all its probes are set.
// Probes of one layer may repeat a bit.
func (l *Layout) Probes(seg []string, dst []Probe) ([]Probe, uint64) {
	var kh keyHash
	c := l.c
	c.hash(seg, &kh)
	if c.mode == Paper {
		var laddr [MaxHashes]uint64
		for i := 0; i < kh.n; i++ {
			m := c.layers[i].bits
			for j := 0; j < c.k; j++ {
				pos := paperPos(kh.lo[i], kh.hi[i], j, m)
				laddr[j] ^= pos
				dst = append(dst, Probe{Layer: i, Bit: pos})
			}
		}
		m := c.layers[c.L].bits
		for j := 0; j < c.k; j++ {
			dst = append(dst, Probe{Layer: c.L, Bit: laddr[j] % m})
		}
	} else {
		for i := 0; i <= kh.n; i++ {
			li, hi := c.keyLayer(&kh, i)
			base := fastrange(hi, c.layers[li].blocks) * blockBits
			for j := 0; j < c.k; j++ {
				dst = append(dst, Probe{Layer: li, Bit: base + blockBit(hi, j)})
			}
		}
	}
	return dst, routeHash(&kh)
}

// routeHash derives a shard-choosing hash from the integrity key. It is
// re-mixed so that it is independent of fastrange(ilo, blocks), which picks
// the integrity block: a shard chosen from ilo's high bits directly would
// see only a fraction of its own integrity layer's blocks.
func routeHash(kh *keyHash) uint64 {
	return mix64(kh.ilo ^ mix64(kh.ihi^0x452821e638d01377))
}
