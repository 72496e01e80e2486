package frontier

// fpTable is a set of 64-bit fingerprints: open addressing with linear
// probing in a power-of-two array of slots, doubled when it is 80% full.
// Fingerprints are uniform (a prefix of SHA-256), so the slot is taken from
// their high bits as they are (the stripe is chosen by their low bits). 0
// marks an empty slot, so the fingerprint 0 is kept as 1: the two are one
// fingerprint here, which adds 2^-64 to a pair's collision probability.
// The zero value is an empty set; it is not safe for concurrent use (its
// stripe's lock protects it).
//
// With tagged set (an aging set, see aging.go) every slot also holds a
// generation tag, in tags.
type fpTable struct {
	slot   []uint64
	tags   []uint32 // tagged: the generation of each slot's fingerprint
	tagged bool
	shift  uint // 64 - log2(len(slot))
	n      int  // fingerprints held
}

// fpTableMin is the size of a table's first array of slots.
const fpTableMin = 1 << 8

func (t *fpTable) slots() int { return len(t.slot) }

// full reports whether the next add would double the table.
func (t *fpTable) full() bool { return len(t.slot) == 0 || (t.n+1)*5 > len(t.slot)*4 }

func (t *fpTable) has(fp uint64) bool {
	_, ok := t.find(fp)
	return ok
}

// find returns the slot of fp.
func (t *fpTable) find(fp uint64) (int, bool) {
	if t.n == 0 {
		return 0, false
	}
	if fp == 0 {
		fp = 1
	}
	mask := uint64(len(t.slot) - 1)
	for i := fp >> t.shift; ; i = (i + 1) & mask {
		switch t.slot[i] {
		case fp:
			return int(i), true
		case 0:
			return 0, false
		}
	}
}

// tag returns the generation tag of fp (a tagged table).
func (t *fpTable) tag(fp uint64) (uint32, bool) {
	i, ok := t.find(fp)
	if !ok {
		return 0, false
	}
	return t.tags[i], true
}

// setTag adds fp if absent and sets its tag (a tagged table); it reports
// whether fp was new.
func (t *fpTable) setTag(fp uint64, gen uint32) bool {
	added := t.add(fp)
	i, _ := t.find(fp)
	t.tags[i] = gen
	return added
}

// retain keeps the fingerprints whose tag keep accepts and returns how many
// it dropped (a tagged table): the table is rebuilt at its size.
func (t *fpTable) retain(keep func(tag uint32) bool) int {
	if t.n == 0 {
		return 0
	}
	oldSlot, oldTags := t.slot, t.tags
	t.slot, t.tags = make([]uint64, len(oldSlot)), make([]uint32, len(oldSlot))
	before := t.n
	t.n = 0
	for i, fp := range oldSlot {
		if fp != 0 && keep(oldTags[i]) {
			j, _ := t.put(fp)
			t.tags[j] = oldTags[i]
			t.n++
		}
	}
	return before - t.n
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
	if _, added := t.put(fp); added {
		t.n++
		return true
	}
	return false
}

// put places fp (not 0) and returns its slot, and whether it was absent.
func (t *fpTable) put(fp uint64) (int, bool) {
	mask := uint64(len(t.slot) - 1)
	for i := fp >> t.shift; ; i = (i + 1) & mask {
		switch t.slot[i] {
		case fp:
			return int(i), false
		case 0:
			t.slot[i] = fp
			return int(i), true
		}
	}
}

func (t *fpTable) grow() {
	old, oldTags := t.slot, t.tags
	n := 2 * len(old)
	if n == 0 {
		n = fpTableMin
	}
	t.slot = make([]uint64, n)
	if t.tagged {
		t.tags = make([]uint32, n)
	}
	t.shift = 64
	for m := n; m > 1; m >>= 1 {
		t.shift--
	}
	for i, fp := range old {
		if fp != 0 {
			j, _ := t.put(fp)
			if t.tagged {
				t.tags[j] = oldTags[i]
			}
		}
	}
}
