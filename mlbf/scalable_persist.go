package mlbf

import (
	"bytes"
	"encoding/binary"
	"errors"
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

// WriteTo writes a consistent copy of the filter: inserts wait only while
// the newest generation is copied in memory (see Snapshot).
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	return s.Snapshot().WriteTo(w)
}

// ScalableSnapshot is a consistent copy of a Scalable, taken by
// Scalable.Snapshot, or prepared by PrepareSnapshot and taken by Capture.
// Only the newest generation is copied: the older ones never change again,
// so the snapshot shares them with the filter. A snapshot's memory is
// therefore the newest generation's: a little over half the filter's at
// Growth 2 (57% with three generations at 1%,
// TestScalableSnapshotBesideInserts), against all of it for a Concurrent.
type ScalableSnapshot struct {
	s      *Scalable
	o      ScalableOptions
	frozen []*Concurrent // the generations before the newest, shared
	newest *core
	words  []uint64 // the copy of the newest generation's bits
	left   uint64
}

// Snapshot returns a consistent copy of the filter, to be written later
// with its WriteTo in the format Scalable.WriteTo writes. Inserts wait
// only while the newest generation's bits are copied in memory.
func (s *Scalable) Snapshot() *ScalableSnapshot {
	return s.PrepareSnapshot().Capture()
}

// PrepareSnapshot allocates and touches the memory of a snapshot without
// holding inserts; Capture fills it. A caller that holds inserts itself
// while it captures (a crawl's checkpoint barrier) prepares first, so that
// its barrier lasts only for the copy (as Concurrent.PrepareSnapshot).
func (s *Scalable) PrepareSnapshot() *ScalableSnapshot {
	s.mu.RLock()
	n := len(s.gens[len(s.gens)-1].c.words)
	s.mu.RUnlock()
	return &ScalableSnapshot{s: s, words: touched(n)}
}

// Capture copies the filter s was prepared from into s, with inserts held
// for the copy of the newest generation alone, and returns s. Capturing
// again replaces the copy.
func (p *ScalableSnapshot) Capture() *ScalableSnapshot {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// A growth that is due is done first: its newest generation is the
	// one the file must say keys go to.
	s.growIfDue()
	last := s.gens[len(s.gens)-1]
	p.o = s.o
	p.frozen = append(p.frozen[:0], s.gens[:len(s.gens)-1]...)
	p.newest = last.c
	if len(p.words) != len(last.c.words) {
		// A generation was added since PrepareSnapshot.
		p.words = touched(len(last.c.words))
	}
	// The exclusive lock holds every insert: a plain copy is consistent.
	copy(p.words, last.c.words)
	p.left = uint64(s.left.Load())
	if p.left == neverGrow {
		p.left = math.MaxUint64
	}
	return p
}

// WriteTo writes the snapshot in the format of Scalable.WriteTo; a
// Scalable's ReadFrom reads it back. It may be called more than once,
// beside inserts into the filter; a prepared snapshot must be captured
// first.
func (p *ScalableSnapshot) WriteTo(w io.Writer) (int64, error) {
	if p.newest == nil {
		return 0, errors.New("mlbf: ScalableSnapshot.WriteTo before Capture")
	}
	le := binary.LittleEndian
	h := make([]byte, 0, scalableHeader+4)
	h = append(h, scalableMagic[:]...)
	h = le.AppendUint16(h, 1)
	h = le.AppendUint32(h, uint32(p.o.Layers))
	h = le.AppendUint32(h, uint32(p.o.Growth))
	h = le.AppendUint64(h, p.o.ExpectedURLs)
	h = le.AppendUint64(h, math.Float64bits(p.o.FalsePositiveRate))
	h = le.AppendUint64(h, math.Float64bits(p.o.Tightening))
	h = le.AppendUint32(h, uint32(len(p.frozen)+1))
	h = le.AppendUint64(h, p.left)
	h = le.AppendUint32(h, crc32.Checksum(h, castagnoli))
	cw := &countWriter{w: w}
	if _, err := cw.Write(h); err != nil {
		return cw.n, fmt.Errorf("mlbf: write scalable header: %w", err)
	}
	for _, g := range p.frozen {
		// Frozen: no insert writes its bits after the growth that
		// froze it, which happened before Capture.
		if _, err := writeFilter(cw, kindFilter, g.c, g.c.words); err != nil {
			return cw.n, err
		}
	}
	if _, err := writeFilter(cw, kindFilter, p.newest, p.words); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

// ReadFrom replaces s with a scalable filter read from r. Bad data gives
// an error wrapping ErrFormat or ErrChecksum, as for Filter, and leaves s
// unchanged. Calls running beside it see the old filter or the new.
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
	if gens < 1 || gens > MaxGenerations {
		return cr.n, bad("%d generations", gens)
	}
	// Each generation must have the geometry the options give it; it is
	// computed without allocating, so a hostile header costs nothing until
	// the generation's bits actually arrive (readFilter allocates as they
	// do).
	//
	// The salt is the first generation's (the header predates salts);
	// every later one must have it too.
	fresh := &Scalable{o: o}
	for i := 0; i < int(gens); i++ {
		c, n, err := readFilter(cr.r, kindFilter)
		cr.n += n
		if err != nil {
			return cr.n, fmt.Errorf("mlbf: scalable generation %d: %w", i+1, err)
		}
		if i == 0 {
			o.Salt = c.salt
			fresh.o.Salt = c.salt
		}
		go1 := o.generationOptions(i)
		want, _, err := shapeFor(go1)
		if err != nil {
			return cr.n, bad("generation %d: %v", i+1, err)
		}
		if err := want.sameShape(c); err != nil {
			return cr.n, bad("generation %d: %v", i+1, err)
		}
		fresh.gens = append(fresh.gens, newConcurrent(c))
		fresh.caps = append(fresh.caps, go1.ExpectedURLs)
	}
	last := fresh.caps[len(fresh.caps)-1]
	if left == 0 || left > last && left != math.MaxUint64 {
		return cr.n, bad("%d keys left in a generation of %d", left, last)
	}
	if left == math.MaxUint64 {
		left = neverGrow
	} else {
		left = min(left, neverGrow-1) // a capacity beyond 2^63 keys
	}
	s.mu.Lock()
	s.o, s.gens, s.caps = fresh.o, fresh.gens, fresh.caps
	s.left.Store(int64(left))
	s.mu.Unlock()
	return cr.n, nil
}
