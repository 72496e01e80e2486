package crawl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// snapshotMagic starts a seen-set snapshot: the magic, the checkpoint
// generation (8 bytes, big-endian), then the set as its WriteTo wrote it
// (mlbf's binary format carries its own version and checksum).
const snapshotMagic = "LCSEEN01"

// ErrSnapshot is wrapped by ReadSnapshot's errors about a snapshot header.
var ErrSnapshot = errors.New("crawl: not a layercrawl seen-set snapshot")

// WriteSnapshot writes a seen-set snapshot of checkpoint generation gen:
// the header, then set.
func WriteSnapshot(w io.Writer, gen uint64, set io.WriterTo) error {
	head := binary.BigEndian.AppendUint64([]byte(snapshotMagic), gen)
	if _, err := w.Write(head); err != nil {
		return err
	}
	_, err := set.WriteTo(w)
	return err
}

// ReadSnapshot reads a snapshot written by WriteSnapshot into set and
// returns its checkpoint generation.
func ReadSnapshot(r io.Reader, set io.ReaderFrom) (gen uint64, err error) {
	var head [len(snapshotMagic) + 8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("%w: header: %w", ErrSnapshot, err)
	}
	if string(head[:len(snapshotMagic)]) != snapshotMagic {
		return 0, fmt.Errorf("%w: magic %q", ErrSnapshot, head[:len(snapshotMagic)])
	}
	gen = binary.BigEndian.Uint64(head[len(snapshotMagic):])
	if _, err := set.ReadFrom(r); err != nil {
		return 0, err
	}
	return gen, nil
}
