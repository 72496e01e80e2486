package frontier

// fpTable is a set of 64-bit fingerprints: open addressing with linear
// probing in a power-of-two array of slots, doubled when it is 80% full.
// Fingerprints are uniform (a prefix of SHA-256), so the slot is taken from
// their high bits as they are (the stripe is chosen by their low bits). 0
// marks an empty slot, so the fingerprint 0 is kept as 1: the two are one
// fingerprint here, which adds 2^-64 to a pair's collision probability.
// The zero value is an empty set; it is not safe for concurrent use (its
// stripe's lock protects it).
type fpTable struct {
	slot  []uint64
	shift uint // 64 - log2(len(slot))
	n     int  // fingerprints held
}

// fpTableMin is the size of a table's first array of slots.
const fpTableMin = 1 << 8

func (t *fpTable) slots() int { return len(t.slot) }

// full reports whether the next add would double the table.
func (t *fpTable) full() bool { return len(t.slot) == 0 || (t.n+1)*5 > len(t.slot)*4 }

func (t *fpTable) has(fp uint64) bool {
	if t.n == 0 {
		return false
	}
	if fp == 0 {
		fp = 1
	}
	mask := uint64(len(t.slot) - 1)
	for i := fp >> t.shift; ; i = (i + 1) & mask {
		switch t.slot[i] {
		case fp:
			return true
		case 0:
			return false
		}
	}
}

// add inserts fp, doubling the table first when it is full, and reports
// whether fp was new.
func (t *fpTable) add(fp uint64) bool {
	if fp == 0 {
		fp = 1
	}
	if t.full() {
		t.grow()
	}
	if t.put(fp) {
		t.n++
		return true
	}
	return false
}

func (t *fpTable) put(fp uint64) bool {
	mask := uint64(len(t.slot) - 1)
	for i := fp >> t.shift; ; i = (i + 1) & mask {
		switch t.slot[i] {
		case fp:
			return false
		case 0:
			t.slot[i] = fp
			return true
		}
	}
}

func (t *fpTable) grow() {
	old := t.slot
	n := 2 * len(old)
	if n == 0 {
		n = fpTableMin
	}
	t.slot = make([]uint64, n)
	t.shift = 64
	for m := n; m > 1; m >>= 1 {
		t.shift--
	}
	for _, fp := range old {
		if fp != 0 {
			t.put(fp)
		}
	}
}
