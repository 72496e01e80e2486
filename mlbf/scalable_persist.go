package mlbf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// The scalable filter's format (version 1), little-endian:
//
//	magic "MLBS" | version u16 | layers u32 | growth u32 |
//	first capacity u64 | rate f64 | tightening f64 | generations u32 |
//	keys the newest generation may still take u64 | CRC-32C of the above u32
//	then every generation, the oldest first, in the filter format (WriteTo
//	of Filter), each checked against the geometry the options give it.

var scalableMagic = [4]byte{'M', 'L', 'B', 'S'}

const scalableHeader = 4 + 2 + 4 + 4 + 8 + 8 + 8 + 4 + 8

// WriteTo writes a consistent copy of the filter (calls wait meanwhile).
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	le := binary.LittleEndian
	h := make([]byte, 0, scalableHeader+4)
	h = append(h, scalableMagic[:]...)
	h = le.AppendUint16(h, 1)
	h = le.AppendUint32(h, uint32(s.o.Layers))
	h = le.AppendUint32(h, uint32(s.o.Growth))
	h = le.AppendUint64(h, s.o.ExpectedURLs)
	h = le.AppendUint64(h, math.Float64bits(s.o.FalsePositiveRate))
	h = le.AppendUint64(h, math.Float64bits(s.o.Tightening))
	h = le.AppendUint32(h, uint32(len(s.gens)))
	h = le.AppendUint64(h, s.left)
	h = le.AppendUint32(h, crc32.Checksum(h, castagnoli))
	cw := &countWriter{w: w}
	if _, err := cw.Write(h); err != nil {
		return cw.n, fmt.Errorf("mlbf: write scalable header: %w", err)
	}
	for _, g := range s.gens {
		if _, err := g.WriteTo(cw); err != nil {
			return cw.n, err
		}
	}
	return cw.n, nil
}

// ReadFrom replaces s with a scalable filter read from r. Bad data gives
// an error wrapping ErrFormat or ErrChecksum, as for Filter, and leaves s
// unchanged. It must not run concurrently with other methods of s.
func (s *Scalable) ReadFrom(r io.Reader) (int64, error) {
	cr := &countReader{r: r}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: scalable: "+format, append([]any{ErrFormat}, a...)...)
	}
	h := make([]byte, scalableHeader+4)
	if err := cr.full(h); err != nil {
		return cr.n, err
	}
	if !bytes.Equal(h[:4], scalableMagic[:]) {
		return cr.n, bad("bad magic %q", h[:4])
	}
	le := binary.LittleEndian
	if v := le.Uint16(h[4:]); v != 1 {
		return cr.n, bad("unsupported version %d", v)
	}
	if got, want := le.Uint32(h[scalableHeader:]), crc32.Checksum(h[:scalableHeader], castagnoli); got != want {
		return cr.n, fmt.Errorf("%w: scalable header", ErrChecksum)
	}
	o := ScalableOptions{
		Layers:            int(le.Uint32(h[6:])),
		Growth:            int(le.Uint32(h[10:])),
		ExpectedURLs:      le.Uint64(h[14:]),
		FalsePositiveRate: math.Float64frombits(le.Uint64(h[22:])),
		Tightening:        math.Float64frombits(le.Uint64(h[30:])),
	}
	gens, left := le.Uint32(h[38:]), le.Uint64(h[42:])
	if err := o.ensure(); err != nil || o.Growth > 1<<16 {
		return cr.n, bad("options %+v: %v", o, err)
	}
	if gens < 1 || gens > maxGenerations {
		return cr.n, bad("%d generations", gens)
	}
	// Each generation must have the geometry the options give it; it is
	// computed without allocating, so a hostile header costs nothing until
	// the generation's bits actually arrive (readFilter allocates as they
	// do).
	fresh := &Scalable{o: o}
	for i := 0; i < int(gens); i++ {
		go1 := o.generationOptions(i)
		want, _, err := shapeFor(go1)
		if err != nil {
			return cr.n, bad("generation %d: %v", i+1, err)
		}
		c, n, err := readFilter(cr.r, kindFilter)
		cr.n += n
		if err != nil {
			return cr.n, fmt.Errorf("mlbf: scalable generation %d: %w", i+1, err)
		}
		if err := want.sameShape(c); err != nil {
			return cr.n, bad("generation %d: %v", i+1, err)
		}
		fresh.gens = append(fresh.gens, &Filter{c: c})
		fresh.caps = append(fresh.caps, go1.ExpectedURLs)
	}
	last := fresh.caps[len(fresh.caps)-1]
	if left == 0 || left > last && left != math.MaxUint64 {
		return cr.n, bad("%d keys left in a generation of %d", left, last)
	}
	fresh.left = left
	s.mu.Lock()
	s.o, s.gens, s.caps, s.left = fresh.o, fresh.gens, fresh.caps, fresh.left
	s.mu.Unlock()
	return cr.n, nil
}
