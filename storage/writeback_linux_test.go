package storage

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStartWritebackOS(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 3*writebackChunk)); err != nil {
		t.Fatal(err)
	}
	if err := startWritebackOS(f, 0, 2*writebackChunk); err != nil {
		t.Errorf("dirty range: %v", err)
	}
	if err := startWritebackOS(f, 2*writebackChunk, 4*writebackChunk); err != nil {
		t.Errorf("range past the end: %v", err)
	}
	if err := startWritebackOS(f, -1, 10); err == nil {
		t.Error("negative offset: no error")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := startWritebackOS(f, 0, writebackChunk); err == nil {
		t.Error("closed file: no error")
	}
}
