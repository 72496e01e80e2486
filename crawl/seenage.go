package crawl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/layercrawl/layercrawl/frontier"
	"github.com/layercrawl/layercrawl/mlbf"
)

// The aging seen-set's filter (issue 35): in a continuous crawl the
// frontier's exact set ages by generations (frontier/aging.go), and so
// does the filter in front of it, after Yoon's A2 filter (2010): the
// current generation's filter takes every insert, the previous one's only
// answers tests, and at each rotation of the exact set the current one
// becomes the previous one and a new empty one, sized like it, takes its
// place. A URL is in the filter if it was inserted in this generation or
// the one before, which is what a live fingerprint is: the frontier
// inserts every URL it tags (frontier.Rotator). The filter's memory is
// then two generations' URLs, not every URL ever seen.
//
// A resumed crawl loads the filters its last snapshot holds, which may be
// from a generation before the store's (a rotation after the checkpoint),
// and since then URLs found by a check only moved to the current filter,
// which no journal records: so every filter it loads keeps answering
// until the store's generation's fingerprints are dead (until = that
// generation + 1). The filter then covers more than the live set for up
// to two windows after a resume, never less.

var _ frontier.Rotator = (*localSeen)(nil)

// seenFilter is what the seen-set needs of an mlbf filter: *mlbf.Concurrent
// and *mlbf.Scalable.
type seenFilter interface {
	TestAndAdd(seg []string) bool
	Test(seg []string) bool
	TotalBits() uint64
	Salt() uint64
	io.WriterTo
}

// olderFilter is an earlier generation's filter.
type olderFilter struct {
	f     seenFilter
	until uint32 // the last generation it answers in
}

// PrepareRotation implements frontier.Rotator: it allocates the filter of
// generation gen (when the rotation will need one) and returns the swap.
func (s *localSeen) PrepareRotation(gen uint32) (func(), error) {
	st := s.state.Load()
	var fresh seenFilter
	if st.needsFilter(gen) {
		var err error
		if fresh, err = s.newFilter(st); err != nil {
			return nil, fmt.Errorf("crawl: duplicate filter of generation %d: %w", gen, err)
		}
	}
	return func() {
		st := s.state.Load()
		if st.needsFilter(gen) && fresh == nil {
			// Cannot happen: only the frontier changes the state between
			// the preparation and the swap. Keep what it has rather than
			// forget.
			return
		}
		if next := st.rotated(gen, fresh); next != st {
			s.state.Store(next)
		}
	}, nil
}

// needsFilter reports whether rotating st to gen starts a new filter.
func (st *seenState) needsFilter(gen uint32) bool {
	switch {
	case !st.aging:
		// A new filter, one rebuilt from the journal or one from a
		// snapshot of a crawl that did not age: it is gen's.
		return false
	case st.loaded:
		return st.gen != gen
	}
	return gen > st.gen
}

// rotated returns st moved to generation gen, with fresh as its new
// current filter if it needs one.
func (st *seenState) rotated(gen uint32, fresh seenFilter) *seenState {
	if st.aging && !st.loaded && gen <= st.gen {
		return st
	}
	n := &seenState{aging: true, gen: gen, fixed: st.fixed, grow: st.grow}
	// A loaded set keeps answering for all it holds until gen's
	// fingerprints are dead; otherwise the current filter answers until
	// its own generation's are.
	until := st.gen + 1
	if st.loaded {
		until = gen + 1
	}
	if st.needsFilter(gen) {
		n.older = append(n.older, olderFilter{f: st.cur(), until: until})
		n.setCur(fresh)
	}
	for _, o := range st.older {
		if st.loaded {
			o.until = max(o.until, until)
		}
		if o.until >= gen {
			n.older = append(n.older, o)
		}
	}
	return n
}

// newFilter returns an empty filter like st's current one: a growing
// filter of the same options, or a fixed one of the crawl's ExpectedURLs
// and FalsePositiveRate, with the same salt.
func (s *localSeen) newFilter(st *seenState) (seenFilter, error) {
	if st.grow != nil {
		return mlbf.NewScalable(st.grow.Options())
	}
	return mlbf.NewConcurrent(mlbf.Options{ExpectedURLs: s.expected, FalsePositiveRate: s.rate, Salt: st.fixed.Salt()})
}

// The aging format, all integers little-endian as in mlbf's:
//
//	header: magic "LCAG" | version u16 (1) | generation u32 |
//	        older count u32 | older count × until u32 | CRC-32C of the header u32
//	then the current filter, then each older one, newest first, each in
//	mlbf's format (a Concurrent's "MLBF" or a Scalable's "MLBS", each with
//	its own checksums)
const (
	agingMagic   = "LCAG"
	agingVersion = 1
	// maxOlder bounds the older filters a snapshot may hold: a rotation
	// keeps one, a resume one or two more.
	maxOlder = 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// agingSnapshot is a consistent copy of an aging seen-set: the current
// filter's copy, and the older filters themselves (no insert changes
// them).
type agingSnapshot struct {
	gen   uint32
	cur   io.WriterTo
	older []olderFilter
}

func (a *agingSnapshot) WriteTo(w io.Writer) (int64, error) {
	le := binary.LittleEndian
	h := append([]byte(agingMagic), 0, 0)
	le.PutUint16(h[4:], agingVersion)
	h = le.AppendUint32(h, a.gen)
	h = le.AppendUint32(h, uint32(len(a.older)))
	for _, o := range a.older {
		h = le.AppendUint32(h, o.until)
	}
	h = le.AppendUint32(h, crc32.Checksum(h, castagnoli))
	n, err := w.Write(h)
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("crawl: write seen-set header: %w", err)
	}
	m, err := a.cur.WriteTo(w)
	total += m
	for i := 0; err == nil && i < len(a.older); i++ {
		m, err = a.older[i].f.WriteTo(w)
		total += m
	}
	return total, err
}

// readAging reads a set in the aging format. Its errors wrap
// mlbf.ErrFormat or mlbf.ErrChecksum.
func readAging(r io.Reader) (*seenState, int64, error) {
	le := binary.LittleEndian
	var total int64
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: aging seen-set: "+format, append([]any{mlbf.ErrFormat}, a...)...)
	}
	full := func(b []byte) error {
		n, err := io.ReadFull(r, b)
		total += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return bad("truncated: %w", err)
		}
		return nil
	}
	h := make([]byte, 4+2+4+4)
	if err := full(h); err != nil {
		return nil, total, err
	}
	if string(h[:4]) != agingMagic {
		return nil, total, bad("magic %q", h[:4])
	}
	if v := le.Uint16(h[4:]); v != agingVersion {
		return nil, total, bad("version %d", v)
	}
	gen, count := le.Uint32(h[6:]), le.Uint32(h[10:])
	if count > maxOlder {
		return nil, total, bad("%d older filters, at most %d", count, maxOlder)
	}
	rest := make([]byte, 4*count+4)
	if err := full(rest); err != nil {
		return nil, total, err
	}
	h = append(h, rest[:4*count]...)
	if got, want := le.Uint32(rest[4*count:]), crc32.Checksum(h, castagnoli); got != want {
		return nil, total, fmt.Errorf("%w: aging seen-set header", mlbf.ErrChecksum)
	}
	st := &seenState{aging: true, gen: gen}
	cur, n, err := readFilter(r)
	total += n
	if err != nil {
		return nil, total, err
	}
	st.setCur(cur)
	for i := range count {
		f, n, err := readFilter(r)
		total += n
		if err != nil {
			return nil, total, err
		}
		st.older = append(st.older, olderFilter{f: f, until: le.Uint32(h[14+4*i:])})
	}
	return st, total, nil
}
