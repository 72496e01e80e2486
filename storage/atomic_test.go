package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snap")
	for i, content := range []string{"first", "", strings.Repeat("second ", 10000)} {
		if err := WriteFileAtomic(path, func(w io.Writer) error {
			_, err := io.WriteString(w, content)
			return err
		}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("write %d: file = %d bytes, %v; want %d bytes", i, len(got), err, len(content))
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, %v; want 0644", fi.Mode().Perm(), err)
	}
	assertNoTemp(t, dir)
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+tempPattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 0 {
		t.Errorf("temporary files left behind: %v", m)
	}
}

// TestWriteFileAtomicFaults fails every step in turn and checks that the
// target keeps its old content whenever the step precedes the rename, holds
// the new content after it, and that no temporary file is left.
func TestWriteFileAtomicFaults(t *testing.T) {
	steps := []struct {
		step    string
		wantNew bool // the rename happened before the fault
	}{
		{stepCreate, false},
		{stepWrite, false},
		{stepSync, false},
		{stepClose, false},
		{stepRename, false},
		{stepSyncDir, true},
	}
	injected := errors.New("injected fault")
	for _, s := range steps {
		t.Run(s.step, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "snap")
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := writeFileAtomic(path, func(w io.Writer) error {
				_, err := io.WriteString(w, "new")
				return err
			}, func(step string) error {
				if step == s.step {
					return injected
				}
				return nil
			})
			if !errors.Is(err, injected) {
				t.Fatalf("error = %v, want the injected fault", err)
			}
			got, _ := os.ReadFile(path)
			want := "old"
			if s.wantNew {
				want = "new"
			}
			if string(got) != want {
				t.Errorf("after fault at %s: content %q, want %q", s.step, got, want)
			}
			assertNoTemp(t, dir)
		})
	}

	t.Run("fn fails", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "snap")
		err := WriteFileAtomic(path, func(w io.Writer) error {
			io.WriteString(w, "half")
			return injected
		})
		if err != injected {
			t.Errorf("error = %v, want fn's error as is", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("target exists after fn failed: %v", err)
		}
		assertNoTemp(t, dir)
	})
}

// checkedPayload is the content the crash test writes: generation number,
// filler, then the generation again, so that a mix of two writes or a torn
// write cannot pass decodeChecked.
func checkedPayload(gen int) []byte {
	g := strconv.Itoa(gen)
	return []byte(g + "\n" + strings.Repeat(g, 20000) + "\n" + g + "\n")
}

func decodeChecked(r io.Reader) (int, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	first, _, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return 0, errors.New("no header line")
	}
	gen, err := strconv.Atoi(string(first))
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(b, checkedPayload(gen)) {
		return 0, fmt.Errorf("content is not generation %d", gen)
	}
	return gen, nil
}

// TestWriteFileAtomicCrash runs a child process that rewrites one file in a
// loop, kills it with SIGKILL at varying moments, and checks that the file
// always decodes to one whole generation.
func TestWriteFileAtomicCrash(t *testing.T) {
	if path := os.Getenv("STORAGE_ATOMIC_CHILD"); path != "" {
		for gen := 1; ; gen++ {
			if err := WriteFileAtomic(path, func(w io.Writer) error {
				_, err := w.Write(checkedPayload(gen))
				return err
			}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "snap")
	last := 0
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileAtomicCrash$")
		cmd.Env = append(os.Environ(), "STORAGE_ATOMIC_CHILD="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+40*round) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		var gen int
		err := ReadFileAtomic(path, func(r io.Reader) error {
			var err error
			gen, err = decodeChecked(r)
			return err
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue // killed before the first rename
		}
		if err != nil {
			t.Fatalf("round %d: after SIGKILL the file does not decode: %v", round, err)
		}
		if gen < 1 {
			t.Fatalf("round %d: generation %d", round, gen)
		}
		last = gen
	}
	t.Logf("last generation read: %d", last)
}

func TestReadFileAtomic(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	err := ReadFileAtomic(missing, func(io.Reader) error { t.Fatal("decode called on a missing file"); return nil })
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrCorrupt) {
		t.Errorf("missing file: %v; want fs.ErrNotExist and not ErrCorrupt", err)
	}

	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	decodeErr := errors.New("bad magic")
	err = ReadFileAtomic(bad, func(r io.Reader) error { io.ReadAll(r); return decodeErr })
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, decodeErr) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("corrupt file: %v; want ErrCorrupt wrapping the decoder's error", err)
	}
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != bad {
		t.Errorf("corrupt file: errors.As CorruptError = %v", ce)
	}

	// A directory is neither missing nor corrupt: reading it fails with an I/O error.
	err = ReadFileAtomic(dir, func(r io.Reader) error { _, err := io.ReadAll(r); return err })
	if err == nil || errors.Is(err, ErrCorrupt) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("directory: %v; want an I/O error that is neither corrupt nor missing", err)
	}

	good := filepath.Join(dir, "good")
	if err := WriteFileAtomic(good, func(w io.Writer) error { _, err := w.Write(checkedPayload(7)); return err }); err != nil {
		t.Fatal(err)
	}
	var gen int
	if err := ReadFileAtomic(good, func(r io.Reader) error { var err error; gen, err = decodeChecked(r); return err }); err != nil || gen != 7 {
		t.Errorf("good file: gen %d, %v", gen, err)
	}
}
