package neardup

import (
	"errors"
	"fmt"
	"math"
)

// PMBFOptions configure NewPMBF.
type PMBFOptions struct {
	// RowBits is m, the size of every row's Bloom filter, a multiple of
	// 64; default 32768 (4 KiB).
	RowBits int
	// FalsePositiveRate is p, the rate each row is sized for when full:
	// a row takes n = m (ln 2)² / -ln p shingles, with k = (m/n) ln 2
	// hashes (Butakov, equations (1) and (2)); default 0.05, the paper's
	// Table 1.
	FalsePositiveRate float64
	// Removable keeps each document's shingles, so that Remove can
	// rebuild its rows (8 bytes per shingle, not counted in SizeBytes:
	// the paper rebuilds rows from the documents themselves).
	Removable bool
}

// EnsureDefaults fills in the zero fields.
func (o *PMBFOptions) EnsureDefaults() {
	if o.RowBits == 0 {
		o.RowBits = 32768
	}
	if o.FalsePositiveRate == 0 {
		o.FalsePositiveRate = 0.05
	}
}

// Validate reports options that cannot work.
func (o *PMBFOptions) Validate() error {
	switch {
	case o.RowBits < 64 || o.RowBits%64 != 0 || o.RowBits > 1<<26:
		return fmt.Errorf("%w: PMBF RowBits %d is not a multiple of 64 in 64..2^26", ErrInvalidOptions, o.RowBits)
	case !(o.FalsePositiveRate > 0 && o.FalsePositiveRate < 1):
		return fmt.Errorf("%w: PMBF FalsePositiveRate %g not in (0, 1)", ErrInvalidOptions, o.FalsePositiveRate)
	}
	return nil
}

// rowCapacity returns n and k for the options (equation (2)).
func (o *PMBFOptions) rowCapacity() (n, k int) {
	n = max(1, int(float64(o.RowBits)*math.Ln2*math.Ln2/-math.Log(o.FalsePositiveRate)))
	k = max(1, int(math.Round(float64(o.RowBits)/float64(n)*math.Ln2)))
	return n, k
}

// PMBF is the pseudo-matrix Bloom filter of Butakov ("Using Bloom filters
// in data leak protection applications", seeds 000 and 001), as the paper
// describes it: rows of equal-size Bloom filters; several documents per
// row, each row's index listing its documents and its remaining capacity;
// a long document spans rows; removing a document rebuilds its rows; and
// a query scores every row by the share of the query's shingles it holds.
//
// The paper leaves the second stage (confirming which document of a row
// matches) out of scope: every document of a row scoring at least the
// threshold is reported, with the row's score. That score is a
// containment, not a resemblance; Query converts it for documents of
// equal size (c/(2-c)) after removing the row's expected false positives.
// A document spanning rows is scored by its best row. A query tests every
// shingle in every row: time linear in the collection.
type PMBF struct {
	opts PMBFOptions
	n, k int // shingles per row, hashes

	rows  [][]uint64 // RowBits/64 words each
	free  []int      // remaining capacity of each row, in shingles
	index [][]uint64 // documents of each row
	docs  map[uint64]*pmbfDoc
}

type pmbfDoc struct {
	rows     []int
	shingles [][]uint64 // per row, when Removable
}

// NewPMBF returns an empty PMBF.
func NewPMBF(opts PMBFOptions) (*PMBF, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	p := &PMBF{opts: opts, docs: map[uint64]*pmbfDoc{}}
	p.n, p.k = opts.rowCapacity()
	return p, nil
}

func (p *PMBF) set(row int, s uint64) {
	h1, h2 := s, mix64(s)|1
	m := uint64(p.opts.RowBits)
	for i := range p.k {
		b := (h1 + uint64(i)*h2) % m
		p.rows[row][b/64] |= 1 << (b % 64)
	}
}

func (p *PMBF) test(row int, s uint64) bool {
	h1, h2 := s, mix64(s)|1
	m := uint64(p.opts.RowBits)
	r := p.rows[row]
	for i := range p.k {
		b := (h1 + uint64(i)*h2) % m
		if r[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// Add places d's shingles in the last row with capacity left, going on in
// new rows as needed. Adding an id again replaces the document.
func (p *PMBF) Add(id uint64, d *Doc) {
	if len(d.Shingles) == 0 {
		return
	}
	if _, ok := p.docs[id]; ok {
		p.Remove(id)
	}
	doc := &pmbfDoc{}
	rest := d.Shingles
	for len(rest) > 0 {
		row := len(p.rows) - 1
		if row < 0 || p.free[row] == 0 {
			p.rows = append(p.rows, make([]uint64, p.opts.RowBits/64))
			p.free = append(p.free, p.n)
			p.index = append(p.index, nil)
			row++
		}
		part := rest[:min(len(rest), p.free[row])]
		rest = rest[len(part):]
		for _, s := range part {
			p.set(row, s)
		}
		p.free[row] -= len(part)
		p.index[row] = append(p.index[row], id)
		doc.rows = append(doc.rows, row)
		if p.opts.Removable {
			doc.shingles = append(doc.shingles, append([]uint64(nil), part...))
		}
	}
	p.docs[id] = doc
}

// ErrNotRemovable is returned by Remove on a PMBF made without Removable.
var ErrNotRemovable = errors.New("neardup: PMBF made without Removable")

// Remove takes a document out by rebuilding the rows it occupies from the
// other documents of those rows (the paper's localized removal). Its
// space in those rows is free again only for later documents' tails: rows
// are filled in order.
func (p *PMBF) Remove(id uint64) error {
	if !p.opts.Removable {
		return ErrNotRemovable
	}
	doc, ok := p.docs[id]
	if !ok {
		return nil
	}
	delete(p.docs, id)
	for _, row := range doc.rows {
		clear(p.rows[row])
		p.free[row] = p.n
		ids := p.index[row][:0]
		for _, other := range p.index[row] {
			if other == id {
				continue
			}
			ids = append(ids, other)
			od := p.docs[other]
			for i, r := range od.rows {
				if r == row {
					for _, s := range od.shingles[i] {
						p.set(row, s)
					}
					p.free[row] -= len(od.shingles[i])
				}
			}
		}
		p.index[row] = ids
	}
	return nil
}

// RowScores returns, for every row, the share of the query's shingles it
// holds: the paper's similarity level.
func (p *PMBF) RowScores(d *Doc) []float64 {
	scores := make([]float64, len(p.rows))
	if len(d.Shingles) == 0 {
		return scores
	}
	for row := range p.rows {
		hit := 0
		for _, s := range d.Shingles {
			if p.test(row, s) {
				hit++
			}
		}
		scores[row] = float64(hit) / float64(len(d.Shingles))
	}
	return scores
}

// Query reports every document of every row whose converted score is at
// least min. A document spanning rows is scored on the union of its rows:
// the share of the query's shingles present in any of them.
func (p *PMBF) Query(d *Doc, min float64) []Match {
	scores := p.RowScores(d)
	fp := make([]float64, len(scores))
	for row := range scores {
		// The chance hits of the row's fill: f = fill^k.
		fp[row] = math.Pow(float64(popcount(p.rows[row]))/float64(p.opts.RowBits), float64(p.k))
	}
	convert := func(c, f float64) float64 {
		c = math.Max(0, (c-f)/(1-f))
		return c / (2 - c)
	}
	best := map[uint64]float64{}
	for row, c := range scores {
		for _, id := range p.index[row] {
			if _, done := best[id]; done {
				continue
			}
			doc := p.docs[id]
			if len(doc.rows) == 1 {
				best[id] = convert(c, fp[row])
				continue
			}
			// The sum of the rows' scores bounds their union's.
			sum, f := 0.0, 0.0
			for _, r := range doc.rows {
				sum += scores[r]
				f = math.Max(f, fp[r])
			}
			if convert(math.Min(sum, 1), 0) < min {
				best[id] = 0
				continue
			}
			hit := 0
			for _, s := range d.Shingles {
				for _, r := range doc.rows {
					if p.test(r, s) {
						hit++
						break
					}
				}
			}
			// Chance hits over several rows: 1-(1-f)^rows at most.
			best[id] = convert(float64(hit)/float64(len(d.Shingles)), 1-math.Pow(1-f, float64(len(doc.rows))))
		}
	}
	out := make([]Match, 0, len(best))
	for id, r := range best {
		if r >= min && r > 0 {
			out = append(out, Match{ID: id, Resemblance: r})
		}
	}
	return sortMatches(out)
}

// Len returns the number of documents held.
func (p *PMBF) Len() int { return len(p.docs) }

// Rows returns the number of rows.
func (p *PMBF) Rows() int { return len(p.rows) }

// SizeBytes counts the rows, their capacities and their index entries.
func (p *PMBF) SizeBytes() int {
	entries := 0
	for _, ids := range p.index {
		entries += len(ids)
	}
	return len(p.rows)*(p.opts.RowBits/8+8) + 8*entries
}

// MarshalBinary encodes the options, rows, capacities and index (and
// with Removable the documents' shingles).
func (p *PMBF) MarshalBinary() ([]byte, error) {
	e := newEncoder(kindPMBF)
	e.uvarint(uint64(p.opts.RowBits))
	e.u64(math.Float64bits(p.opts.FalsePositiveRate))
	removable := uint64(0)
	if p.opts.Removable {
		removable = 1
	}
	e.uvarint(removable)
	e.uvarint(uint64(len(p.rows)))
	for row, words := range p.rows {
		e.uvarint(uint64(p.free[row]))
		for _, w := range words {
			e.u64(w)
		}
		e.uvarint(uint64(len(p.index[row])))
		for _, id := range p.index[row] {
			e.u64(id)
			if p.opts.Removable {
				doc := p.docs[id]
				for i, r := range doc.rows {
					if r == row {
						e.uvarint(uint64(len(doc.shingles[i])))
						for _, s := range doc.shingles[i] {
							e.u64(s)
						}
					}
				}
			}
		}
	}
	return e.finish(), nil
}

// UnmarshalBinary replaces the PMBF with an encoded one; on error it is
// unchanged.
func (p *PMBF) UnmarshalBinary(data []byte) error {
	d, err := newDecoder(data, kindPMBF, "PMBF")
	if err != nil {
		return err
	}
	opts := PMBFOptions{RowBits: int(min(d.uvarint(), 1<<30)), FalsePositiveRate: math.Float64frombits(d.u64()), Removable: d.uvarint() == 1}
	if d.err == nil {
		if err := opts.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrFormat, err)
		}
	}
	q := &PMBF{opts: opts, docs: map[uint64]*pmbfDoc{}}
	q.n, q.k = opts.rowCapacity()
	rows := d.count(opts.RowBits / 8)
	for row := range rows {
		free := d.uvarint()
		if free > uint64(q.n) {
			d.fail("row %d has %d free of %d", row, free, q.n)
		}
		words := make([]uint64, opts.RowBits/64)
		for i := range words {
			words[i] = d.u64()
		}
		ids := make([]uint64, d.count(8))
		for i := range ids {
			ids[i] = d.u64()
			doc := q.docs[ids[i]]
			if doc == nil {
				doc = &pmbfDoc{}
				q.docs[ids[i]] = doc
			}
			if len(doc.rows) > 0 && doc.rows[len(doc.rows)-1] == row {
				d.fail("document %d twice in row %d", ids[i], row)
			}
			doc.rows = append(doc.rows, row)
			if opts.Removable {
				sh := make([]uint64, d.count(8))
				for j := range sh {
					sh[j] = d.u64()
				}
				doc.shingles = append(doc.shingles, sh)
			}
		}
		if d.err != nil {
			break
		}
		q.rows = append(q.rows, words)
		q.free = append(q.free, int(free))
		q.index = append(q.index, ids)
	}
	if err := d.end(); err != nil {
		return err
	}
	*p = *q
	return nil
}
