package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// engines lists the engines every store test runs against: pebble (the one
// Open uses) and bbolt (kept for the comparison benchmark).
var engines = []struct {
	name string
	open func(string, Options, bool) (engine, error)
}{
	{"pebble", openPebble},
	{"bbolt", openBolt},
}

func openTestStore(t *testing.T, dir string, eng func(string, Options, bool) (engine, error)) *Store {
	t.Helper()
	s, err := Open(dir, Options{engine: eng})
	if err != nil {
		t.Fatalf("Open(%s) = %v", dir, err)
	}
	return s
}

// checkStore checks invariants of a store that a test leaves open: the
// format record is intact and Ascend over everything is in strict byte order.
func checkStore(t *testing.T, s *Store) {
	t.Helper()
	if err := s.checkFormat(); err != nil {
		t.Errorf("format record: %v", err)
	}
	var prev []byte
	n := 0
	if err := s.Ascend(nil, nil, func(k, _ []byte) bool {
		if n > 0 && bytes.Compare(prev, k) >= 0 {
			t.Errorf("Ascend order: %q then %q", prev, k)
		}
		prev = append(prev[:0], k...)
		n++
		return true
	}); err != nil {
		t.Errorf("Ascend: %v", err)
	}
}

func TestStoreBasics(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			s := openTestStore(t, dir, e.open)
			keys := []string{"", "a", "a\x00", "a\xff", "b", "q/example.org/\x00\x00\x01", "q/example.org/\x00\x00\x02", "\xff\xff"}
			if err := s.Write(func(w Writer) error {
				for _, k := range keys {
					if err := w.Set([]byte(k), []byte("v:"+k)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatalf("Write: %v", err)
			}
			for _, k := range keys {
				got, err := s.Get([]byte(k))
				if err != nil || string(got) != "v:"+k {
					t.Errorf("Get(%q) = %q, %v; want %q, nil", k, got, err, "v:"+k)
				}
			}
			if _, err := s.Get([]byte("absent")); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(absent) error = %v, want ErrNotFound", err)
			}

			ranges := []struct {
				start, end []byte
				want       string
			}{
				{nil, nil, `"",a,a\x00,a\xff,b,q/example.org/\x00\x00\x01,q/example.org/\x00\x00\x02,\xff\xff`},
				{[]byte("a"), []byte("b"), `a,a\x00,a\xff`},
				{[]byte("a\x00"), nil, `a\x00,a\xff,b,q/example.org/\x00\x00\x01,q/example.org/\x00\x00\x02,\xff\xff`},
				{nil, []byte("a"), `""`},
				{[]byte("q/example.org/"), []byte("q/example.org0"), `q/example.org/\x00\x00\x01,q/example.org/\x00\x00\x02`},
				{[]byte("b"), []byte("a"), ``},
				{[]byte("\xff"), nil, `\xff\xff`},
			}
			for _, r := range ranges {
				var got []string
				if err := s.Ascend(r.start, r.end, func(k, v []byte) bool {
					if string(v) != "v:"+string(k) {
						t.Errorf("Ascend value for %q = %q", k, v)
					}
					got = append(got, strings.Trim(fmt.Sprintf("%q", k), `"`))
					return true
				}); err != nil {
					t.Fatalf("Ascend: %v", err)
				}
				for i, g := range got {
					if g == "" {
						got[i] = `""`
					}
				}
				if g := strings.Join(got, ","); g != r.want {
					t.Errorf("Ascend(%q, %q) = %s, want %s", r.start, r.end, g, r.want)
				}
			}

			// Stop early.
			n := 0
			if err := s.Ascend(nil, nil, func(_, _ []byte) bool { n++; return n < 3 }); err != nil || n != 3 {
				t.Errorf("Ascend stopping after 3: visited %d, err %v", n, err)
			}

			// A failing batch writes nothing.
			boom := errors.New("boom")
			err := s.Write(func(w Writer) error {
				if err := w.Set([]byte("partial"), []byte("x")); err != nil {
					return err
				}
				if err := w.Delete([]byte("a")); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Errorf("Write returning boom = %v", err)
			}
			if _, err := s.Get([]byte("partial")); !errors.Is(err, ErrNotFound) {
				t.Errorf("after failed batch, Get(partial) err = %v, want ErrNotFound", err)
			}
			if _, err := s.Get([]byte("a")); err != nil {
				t.Errorf("after failed batch, Get(a) err = %v, want nil", err)
			}

			// Deletes persist across reopen.
			if err := s.Write(func(w Writer) error { return w.Delete([]byte("b")) }); err != nil {
				t.Fatal(err)
			}
			checkStore(t, s)
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := s.Get([]byte("a")); !errors.Is(err, ErrClosed) {
				t.Errorf("Get after Close = %v, want ErrClosed", err)
			}
			s = openTestStore(t, dir, e.open)
			defer s.Close()
			if _, err := s.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
				t.Errorf("after reopen, deleted key: err = %v, want ErrNotFound", err)
			}
			if got, err := s.Get([]byte("a\xff")); err != nil || string(got) != "v:a\xff" {
				t.Errorf("after reopen, Get = %q, %v", got, err)
			}
			checkStore(t, s)
		})
	}
}

func TestOpenRejects(t *testing.T) {
	writeFile := func(t *testing.T, path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	makeStore := func(t *testing.T, eng func(string, Options, bool) (engine, error)) string {
		dir := filepath.Join(t.TempDir(), "state")
		s := openTestStore(t, dir, eng)
		if err := s.Write(func(w Writer) error { return w.Set([]byte("k"), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	setRaw := func(t *testing.T, dir string, eng func(string, Options, bool) (engine, error), key, value []byte) {
		o := Options{engine: eng}
		o.EnsureDefaults()
		e, err := eng(dir, o, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.write(func(w Writer) error {
			if value == nil {
				return w.Delete(key)
			}
			return w.Set(key, value)
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.close(); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		name    string
		engine  func(string, Options, bool) (engine, error)
		prepare func(t *testing.T) string
		want    error
	}{
		{"pebble/foreign files", openPebble, func(t *testing.T) string {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "notes.txt"), "hello")
			return dir
		}, ErrForeign},
		{"bbolt/foreign files", openBolt, func(t *testing.T) string {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "notes.txt"), "hello")
			return dir
		}, ErrForeign},
		{"pebble/path is a file", openPebble, func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "state")
			writeFile(t, p, "not a directory")
			return p
		}, nil},
		{"pebble/a bbolt store", openPebble, func(t *testing.T) string { return makeStore(t, openBolt) }, ErrForeign},
		{"bbolt/a pebble store", openBolt, func(t *testing.T) string { return makeStore(t, openPebble) }, ErrForeign},
		{"pebble/garbage CURRENT", openPebble, func(t *testing.T) string {
			dir := makeStore(t, openPebble)
			writeFile(t, filepath.Join(dir, "CURRENT"), "MANIFEST-999999\n")
			return dir
		}, ErrCorrupt},
		{"pebble/damaged MANIFEST", openPebble, func(t *testing.T) string {
			dir := makeStore(t, openPebble)
			m, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
			if len(m) == 0 {
				t.Fatal("no MANIFEST")
			}
			for _, p := range m {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < len(b); i += 7 {
					b[i] ^= 0x5a
				}
				writeFile(t, p, string(b))
			}
			return dir
		}, ErrCorrupt},
		{"bbolt/damaged meta pages", openBolt, func(t *testing.T) string {
			dir := makeStore(t, openBolt)
			p := filepath.Join(dir, boltFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for i := 16; i < 8192 && i < len(b); i += 5 {
				b[i] ^= 0xa5
			}
			writeFile(t, p, string(b))
			return dir
		}, ErrCorrupt},
		{"pebble/data without format record", openPebble, func(t *testing.T) string {
			dir := makeStore(t, openPebble)
			setRaw(t, dir, openPebble, formatKey, nil)
			return dir
		}, ErrForeign},
		{"pebble/newer format", openPebble, func(t *testing.T) string {
			dir := makeStore(t, openPebble)
			setRaw(t, dir, openPebble, formatKey, []byte(formatMagic+" v99 pebble"))
			return dir
		}, ErrVersion},
		{"bbolt/garbled format record", openBolt, func(t *testing.T) string {
			dir := makeStore(t, openBolt)
			setRaw(t, dir, openBolt, formatKey, []byte("something else"))
			return dir
		}, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.prepare(t)
			s, err := Open(dir, Options{engine: c.engine})
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded on a store that should be rejected")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("Open error = %v, want one matching %v", err, c.want)
			}
			if testing.Verbose() {
				t.Logf("error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "storage: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

// TestOpenEmptyEngineDir checks that a store whose engine files exist but
// which holds no key at all (a crash between creating the files and writing
// the format record) is initialised rather than rejected.
func TestOpenEmptyEngineDir(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			dir := t.TempDir()
			o := Options{engine: e.open}
			o.EnsureDefaults()
			eng, err := e.open(dir, o, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := eng.close(); err != nil {
				t.Fatal(err)
			}
			s := openTestStore(t, dir, e.open)
			checkStore(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestStoreConcurrent(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			s := openTestStore(t, t.TempDir(), e.open)
			defer s.Close()
			const writers, perWriter = 4, 50
			var wg sync.WaitGroup
			errs := make(chan error, writers*2)
			for w := range writers {
				wg.Add(2)
				go func() {
					defer wg.Done()
					for i := range perWriter {
						k := fmt.Appendf(nil, "w%d/%04d", w, i)
						if err := s.Write(func(wr Writer) error { return wr.Set(k, k) }); err != nil {
							errs <- err
							return
						}
					}
				}()
				go func() {
					defer wg.Done()
					for range perWriter {
						if err := s.Ascend([]byte(fmt.Sprintf("w%d/", w)), nil, func(k, v []byte) bool {
							if !bytes.Equal(k, v) {
								errs <- fmt.Errorf("key %q has value %q", k, v)
								return false
							}
							return true
						}); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			n := 0
			if err := s.Ascend(nil, nil, func(_, _ []byte) bool { n++; return true }); err != nil {
				t.Fatal(err)
			}
			if n != writers*perWriter {
				t.Errorf("keys after concurrent writes = %d, want %d", n, writers*perWriter)
			}
			checkStore(t, s)
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		o    Options
		want bool // valid
	}{
		{Options{}, true},
		{Options{CacheSize: 1 << 20, MemTableSize: 1 << 20}, true},
		{Options{CacheSize: -1}, false},
		{Options{MemTableSize: -1}, false},
		{Options{MemTableSize: 1000}, false},
	}
	for _, c := range cases {
		err := c.o.Validate()
		if got := err == nil; got != c.want {
			t.Errorf("%+v.Validate() = %v, want valid=%v", c.o, err, c.want)
		}
	}
}

// TestPebbleDamagedTable damages the table files of a cleanly closed store
// and checks that reading reports ErrCorrupt rather than missing keys.
func TestPebbleDamagedTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := openTestStore(t, dir, openPebble)
	if err := s.Write(func(w Writer) error {
		for i := range 2000 {
			if err := w.Set(fmt.Appendf(nil, "q/host\x00%08d", i), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("Close left no table file: the data is only in the WAL")
	}
	for _, p := range tables {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(b)/2; i += 512 {
			b[i] ^= 0xff
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir, Options{engine: openPebble})
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open = %v, want nil or ErrCorrupt", err)
		}
		return
	}
	defer s.Close()
	n := 0
	err = s.Ascend(nil, nil, func(_, _ []byte) bool { n++; return true })
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("Ascend over damaged tables: %d keys, err %v; want ErrCorrupt", n, err)
	}
}

// TestAscendSnapshot checks that Ascend does not see a batch written while
// it runs (pebble; bbolt's read transaction would block the writer).
func TestAscendSnapshot(t *testing.T) {
	s := openTestStore(t, t.TempDir(), openPebble)
	defer s.Close()
	if err := s.Write(func(w Writer) error {
		for _, k := range []string{"a", "b", "c"} {
			if err := w.Set([]byte(k), []byte("old")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := s.Ascend(nil, nil, func(k, v []byte) bool {
		if string(k) == "a" {
			if err := s.Write(func(w Writer) error {
				if err := w.Set([]byte("b"), []byte("new")); err != nil {
					return err
				}
				return w.Set([]byte("bb"), []byte("new"))
			}); err != nil {
				t.Error(err)
			}
		}
		got = append(got, string(k)+"="+string(v))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := strings.Join(got, ","), "a=old,b=old,c=old"; g != want {
		t.Errorf("Ascend during a write saw %s, want %s", g, want)
	}
}

func FuzzParseFormat(f *testing.F) {
	f.Add(formatMagic + " v1 pebble")
	f.Add(formatMagic + " v99 pebble")
	f.Add(formatMagic + " v0 bbolt")
	f.Add("")
	f.Add(formatMagic + " v-1 pebble extra")
	f.Fuzz(func(t *testing.T, v string) {
		err := parseFormat(v, "pebble", "dir")
		if err == nil {
			fields := strings.Fields(v)
			if len(fields) != 3 || fields[0] != formatMagic || fields[2] != "pebble" || !strings.HasPrefix(fields[1], "v") {
				t.Fatalf("accepted %q", v)
			}
			if n, perr := strconv.Atoi(fields[1][1:]); perr != nil || n < 1 || n > FormatVersion {
				t.Fatalf("accepted version %q", fields[1])
			}
			return
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrForeign) {
			t.Fatalf("parseFormat(%q) = %v: not a store sentinel", v, err)
		}
	})
}

// DeleteRange deletes exactly the keys in [start, end) where the engine
// can (pebble), and says errors.ErrUnsupported where it cannot (bbolt),
// changing nothing.
func TestStoreDeleteRange(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			s := openTestStore(t, filepath.Join(t.TempDir(), "state"), e.open)
			defer s.Close()
			keys := []string{"a1", "a2", "a3", "a4", "a5", "b1"}
			if err := s.Write(func(w Writer) error {
				for _, k := range keys {
					if err := w.Set([]byte(k), []byte("v")); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			err := s.Write(func(w Writer) error {
				rd, ok := w.(RangeDeleter)
				if !ok {
					t.Fatal("Store's Writer has no DeleteRange")
				}
				return rd.DeleteRange([]byte("a2"), []byte("a4"))
			})
			want := []string{"a1", "a4", "a5", "b1"}
			if e.name == "bbolt" {
				if !errors.Is(err, errors.ErrUnsupported) {
					t.Fatalf("bbolt DeleteRange: %v, want errors.ErrUnsupported", err)
				}
				want = keys
			} else if err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := s.Ascend(nil, nil, func(k, _ []byte) bool {
				got = append(got, string(k))
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("keys %q, want %q", got, want)
			}
			checkStore(t, s)
		})
	}
}
