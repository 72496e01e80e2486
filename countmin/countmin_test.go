package countmin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// zipfStream returns n adds over keys drawn from a Zipf law, as in-links
// are: a few keys get most adds. It prints its seed.
func zipfStream(t testing.TB, n, keys int, seed uint64) []string {
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.1, 1, uint64(keys-1))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("https://h%d.example/p/%d", z.Uint64()%200, z.Uint64())
	}
	return out
}

// plain is a count-min sketch without conservative update, over the same
// positions: the bound conservative update must stay within.
type plain struct {
	s      *Sketch
	counts []uint32
}

func (p *plain) add(key string) {
	var idx [MaxRows]int
	p.s.positions(key, &idx)
	for _, i := range idx[:p.s.rows] {
		p.counts[i]++
	}
}

func (p *plain) count(key string) uint32 {
	var idx [MaxRows]int
	p.s.positions(key, &idx)
	m := ^uint32(0)
	for _, i := range idx[:p.s.rows] {
		m = min(m, p.counts[i])
	}
	return m
}

func TestNeverUnderestimatesAndWithinPlain(t *testing.T) {
	for _, tc := range []struct{ rows, width, adds int }{
		{4, 1024, 50_000}, // crowded: 12 keys a counter
		{4, 16384, 50_000},
		{1, 256, 10_000},
		{8, 64, 5_000},
	} {
		t.Run(fmt.Sprintf("%dx%d", tc.rows, tc.width), func(t *testing.T) {
			s, err := New(Options{Rows: tc.rows, Width: tc.width, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			p := &plain{s: s, counts: make([]uint32, tc.rows*tc.width)}
			exact := map[string]uint32{}
			for i, k := range zipfStream(t, tc.adds, 20_000, uint64(tc.width)) {
				got := s.Add(k)
				p.add(k)
				exact[k]++
				if got < exact[k] {
					t.Fatalf("add %d: Add(%q) = %d, below the true %d", i, k, got, exact[k])
				}
			}
			over := 0
			for k, n := range exact {
				got, pl := s.Count(k), p.count(k)
				if got < n {
					t.Errorf("Count(%q) = %d, below the true %d", k, got, n)
				}
				if got > pl {
					t.Errorf("Count(%q) = %d, above plain count-min's %d", k, got, pl)
				}
				if got > n {
					over++
				}
			}
			if s.Total() != uint64(tc.adds) {
				t.Errorf("Total() = %d, want %d", s.Total(), tc.adds)
			}
			t.Logf("%d keys, %d overestimated", len(exact), over)
		})
	}
}

func TestHashKeys(t *testing.T) {
	s, err := New(Options{Width: 512})
	if err != nil {
		t.Fatal(err)
	}
	exact := map[uint64]uint32{}
	r := rand.New(rand.NewPCG(3, 3))
	batch := make([]uint64, 0, 16)
	out := make([]uint32, 16)
	for range 2000 {
		batch = batch[:0]
		for range 16 {
			h := r.Uint64N(3000) * 0x9e3779b97f4a7c15
			batch = append(batch, h)
		}
		s.AddHashes(batch, out[:len(batch)])
		for i, h := range batch {
			exact[h]++
			if out[i] < exact[h] {
				t.Fatalf("AddHashes reported %d for a key added %d times", out[i], exact[h])
			}
		}
	}
	keys := make([]uint64, 0, len(exact))
	for h := range exact {
		keys = append(keys, h)
	}
	got := make([]uint32, len(keys))
	s.CountHashes(keys, got)
	for i, h := range keys {
		if got[i] < exact[h] || got[i] != s.CountHash(h) {
			t.Errorf("CountHashes %d, CountHash %d, true %d", got[i], s.CountHash(h), exact[h])
		}
	}
}

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		n           uint64
		rows, width int
	}{
		{0, 4, MinWidth},
		{1000, 4, MinWidth},
		{100_000, 4, 16384},
		{10_000_000, 4, 1 << 21},
		{1 << 40, 4, SizedMaxWidth},
	} {
		rows, width := Estimate(tc.n)
		if rows != tc.rows || width != tc.width {
			t.Errorf("Estimate(%d) = %d, %d; want %d, %d", tc.n, rows, width, tc.rows, tc.width)
		}
	}
}

func TestNewRejectsBadShapes(t *testing.T) {
	for _, o := range []Options{{Width: 0}, {Rows: -1, Width: 8}, {Rows: MaxRows + 1, Width: 8}, {Width: MaxWidth + 1}} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestPersistRoundTrip(t *testing.T) {
	s, _ := New(Options{Rows: 3, Width: 1000, Seed: 42})
	keys := zipfStream(t, 5000, 2000, 5)
	for _, k := range keys {
		s.Add(k)
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Sketch
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got.Rows() != 3 || got.Width() != 1000 || got.Total() != s.Total() {
		t.Fatalf("decoded %dx%d total %d, want 3x1000 total %d", got.Rows(), got.Width(), got.Total(), s.Total())
	}
	for _, k := range keys {
		if got.Count(k) != s.Count(k) {
			t.Fatalf("Count(%q) = %d after the round trip, want %d", k, got.Count(k), s.Count(k))
		}
	}
	// Counting goes on where it stopped.
	if a, b := got.Add(keys[0]), s.Add(keys[0]); a != b {
		t.Errorf("Add after the round trip = %d, want %d", a, b)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	s, _ := New(Options{Rows: 2, Width: 16})
	s.Add("x")
	good, _ := s.MarshalBinary()
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrFormat},
		{"magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), ErrFormat},
		{"version", mod(func(b []byte) []byte { binary.LittleEndian.PutUint16(b[4:], 2); return b }), ErrVersion},
		{"zero rows", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[6:], 0); return b }), ErrFormat},
		{"huge width", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[10:], 1<<31); return b }), ErrFormat},
		{"truncated", good[:len(good)-1], ErrFormat},
		{"trailing", append(append([]byte(nil), good...), 0), ErrFormat},
		{"flipped counter", mod(func(b []byte) []byte { b[headerSize+3] ^= 1; return b }), ErrChecksum},
		{"flipped total", mod(func(b []byte) []byte { b[22] ^= 1; return b }), ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Sketch
			err := got.UnmarshalBinary(tc.data)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrFormat) {
				t.Fatalf("UnmarshalBinary = %v, want %v (and ErrFormat)", err, tc.want)
			}
			if got.counts != nil {
				t.Errorf("a failed UnmarshalBinary changed the sketch")
			}
		})
	}
}

func FuzzUnmarshal(f *testing.F) {
	s, _ := New(Options{Rows: 2, Width: 8, Seed: 1})
	s.Add("a")
	s.Add("b")
	good, _ := s.MarshalBinary()
	f.Add(good)
	f.Add(good[:headerSize])
	f.Add([]byte("LCCM"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got Sketch
		if err := got.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		again, err := got.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(b) {
			t.Fatalf("re-encoding differs from the accepted input")
		}
		got.Add("x") // usable
	})
}

func TestConcurrentAdds(t *testing.T) {
	s, _ := New(Options{Width: 64})
	const workers, each = 4, 2000
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for range each {
				s.Add("same")
			}
		}()
	}
	for range workers {
		<-done
	}
	if got := s.Count("same"); got < workers*each {
		t.Errorf("Count = %d after %d concurrent adds", got, workers*each)
	}
}

// HashIndexes names the counters AddHash raises: a sketch kept as a flat
// array of counters, updated at those indexes with conservative update,
// counts as the Sketch of the same shape and seed.
func TestHashIndexes(t *testing.T) {
	o := Options{Rows: 3, Width: 64, Seed: 0x5eed}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	flat := make([]uint32, o.Rows*o.Width)
	idx := make([]int, o.Rows)
	for i := range 2000 {
		h := uint64(i%300) * 0x9e3779b97f4a7c15
		want := s.AddHash(h)
		HashIndexes(o, h, idx)
		m := ^uint32(0)
		for r, x := range idx {
			if x < r*o.Width || x >= (r+1)*o.Width {
				t.Fatalf("key %d: row %d index %d outside the row", i, r, x)
			}
			m = min(m, flat[x])
		}
		for _, x := range idx {
			if flat[x] == m {
				flat[x] = m + 1
			}
		}
		if got := m + 1; got != want {
			t.Fatalf("add %d: flat count %d, Sketch count %d", i, got, want)
		}
	}
}
