package storage

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// syncCounter is a pebble file system that counts the syncs of write-ahead
// log files that reach it.
type syncCounter struct {
	vfs.FS
	n atomic.Int64
}

type countedFile struct {
	vfs.File
	n *atomic.Int64
}

func (f countedFile) Sync() error     { f.n.Add(1); return f.File.Sync() }
func (f countedFile) SyncData() error { f.n.Add(1); return f.File.SyncData() }

func (c *syncCounter) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isLog(name) {
		return f, err
	}
	return countedFile{f, &c.n}, nil
}

func (c *syncCounter) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	return c.wrap(name, f, err)
}

func (c *syncCounter) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := c.FS.ReuseForWrite(oldname, newname)
	return c.wrap(newname, f, err)
}

func writeKeys(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		err := s.Write(func(w Writer) error {
			return w.Set([]byte(fmt.Sprintf("k%06d", i)), []byte("v"))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeferSync checks that DeferSync takes the disk flush out of Write
// (none reaches the file system for 200 batches, against one per batch
// without it), that Sync and Close flush, and that everything written is
// there after reopening.
func TestDeferSync(t *testing.T) {
	for _, c := range []struct {
		defer_        bool
		minSyncs      int64 // after 200 writes
		maxSyncs      int64
		syncAfterSync bool // Sync must reach the disk
	}{
		{defer_: false, minSyncs: 200, maxSyncs: 1 << 30},
		{defer_: true, minSyncs: 0, maxSyncs: 0, syncAfterSync: true},
	} {
		t.Run(fmt.Sprintf("DeferSync=%v", c.defer_), func(t *testing.T) {
			dir := t.TempDir()
			fs := &syncCounter{FS: vfs.Default}
			s, err := Open(dir, Options{DeferSync: c.defer_, fs: fs})
			if err != nil {
				t.Fatal(err)
			}
			before := fs.n.Load() // opening writes the format record
			writeKeys(t, s, 0, 200)
			if got := fs.n.Load() - before; got < c.minSyncs || got > c.maxSyncs {
				t.Errorf("200 writes made %d log syncs, want %d to %d", got, c.minSyncs, c.maxSyncs)
			}
			n := fs.n.Load()
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			if c.syncAfterSync && fs.n.Load() == n {
				t.Errorf("Sync made no log sync")
			}
			writeKeys(t, s, 200, 300)
			n = fs.n.Load()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if c.syncAfterSync && fs.n.Load() == n {
				t.Errorf("Close made no log sync")
			}
			if err := s.Sync(); err != ErrClosed {
				t.Errorf("Sync after Close: got %v, want ErrClosed", err)
			}
			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := 0
			if err := s.Ascend(nil, nil, func(k, v []byte) bool { got++; return true }); err != nil {
				t.Fatal(err)
			}
			if got != 300 {
				t.Errorf("reopened store holds %d keys, want 300", got)
			}
		})
	}
}

// TestDeferSyncKill is the guarantee DeferSync keeps: a child process
// writes batches with DeferSync and reports each one Write returned; it is
// killed with SIGKILL; every reported batch must be in the store.
func TestDeferSyncKill(t *testing.T) {
	if dir := os.Getenv("STORAGE_DEFERSYNC_CHILD"); dir != "" {
		deferSyncChild(dir)
		return
	}
	dir := t.TempDir()
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeferSyncKill$")
		cmd.Env = append(os.Environ(), "STORAGE_DEFERSYNC_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := -1
		sc := bufio.NewScanner(out)
		deadline := time.Now().Add(time.Duration(100+100*round) * time.Millisecond)
		for sc.Scan() {
			if n, err := strconv.Atoi(sc.Text()); err == nil {
				acked = n
			}
			if time.Now().After(deadline) && acked >= 0 {
				break
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if acked < 0 {
			t.Fatalf("round %d: the child acknowledged no write", round)
		}
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		v, err := s.Get([]byte("last"))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		last, _ := strconv.Atoi(string(v))
		// Batches are whole or absent, and a prefix of those written.
		next := 0
		if err := s.Ascend([]byte("n"), []byte("o"), func(k, _ []byte) bool {
			if string(k) != fmt.Sprintf("n%09d", next) {
				t.Errorf("round %d: found %s, want batch %d next", round, k, next)
				return false
			}
			next++
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if next != last+1 {
			t.Errorf("round %d: %d numbered keys, but the last batch is %d", round, next, last)
		}
		if last < acked {
			t.Errorf("round %d: store ends at batch %d, the child acknowledged %d", round, last, acked)
		}
		t.Logf("round %d: %d batches acknowledged before the kill, %d in the store", round, acked+1, last+1)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(dir)
	}
}

// deferSyncChild writes numbered batches until it is killed, printing the
// number of each batch after Write returned.
func deferSyncChild(dir string) {
	s, err := Open(dir, Options{DeferSync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		err := s.Write(func(w Writer) error {
			if err := w.Set([]byte(fmt.Sprintf("n%09d", i)), make([]byte, 100)); err != nil {
				return err
			}
			return w.Set([]byte("last"), []byte(strconv.Itoa(i)))
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintln(w, i)
		w.Flush()
	}
}
