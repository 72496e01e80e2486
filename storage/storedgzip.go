package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// appendStoredGzip appends to dst one gzip member (RFC 1952) holding the
// concatenation of parts in deflate's stored blocks (RFC 1951 §3.2.4, no
// compression), and returns the extended slice. Any gzip reader reads it;
// it costs a copy and a CRC-32 instead of a compressor's search.
func appendStoredGzip(dst []byte, parts ...[]byte) []byte {
	// Header as Go's compressors write it: magic, CM=deflate, no flags, no
	// mtime, XFL=0, OS=255 (unknown).
	dst = append(dst, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255)
	var total int
	for _, p := range parts {
		total += len(p)
	}
	crc := uint32(0)
	// A stored block holds at most 65,535 bytes; blocks may span parts.
	const maxBlock = 1<<16 - 1
	left := total
	blockLeft := 0
	for _, p := range parts {
		crc = crc32.Update(crc, crc32.IEEETable, p)
		for len(p) > 0 {
			if blockLeft == 0 {
				blockLeft = min(left, maxBlock)
				final := byte(0)
				if blockLeft == left {
					final = 1
				}
				// BFINAL and BTYPE=00 in one byte (the rest of it is
				// padding to the byte boundary), then LEN and NLEN.
				dst = append(dst, final)
				dst = binary.LittleEndian.AppendUint16(dst, uint16(blockLeft))
				dst = binary.LittleEndian.AppendUint16(dst, ^uint16(blockLeft))
			}
			n := min(len(p), blockLeft)
			dst = append(dst, p[:n]...)
			p, blockLeft, left = p[n:], blockLeft-n, left-n
		}
	}
	if total == 0 {
		dst = append(dst, 1, 0, 0, 0xff, 0xff) // one empty final block
	}
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return binary.LittleEndian.AppendUint32(dst, uint32(total))
}

// compressedMediaTypes are payloads already compressed by their format:
// deflate finds nothing to gain in them (a PNG shrinks by well under 1%)
// and spends as much CPU on them as on text.
var compressedMediaTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
	"image/avif": true, "image/heic": true, "image/jxl": true, "image/apng": true,
	"font/woff": true, "font/woff2": true, "application/font-woff": true,
	"application/zip": true, "application/gzip": true, "application/x-gzip": true,
	"application/zstd": true, "application/x-xz": true, "application/x-bzip2": true,
	"application/x-7z-compressed": true, "application/vnd.rar": true,
	"application/epub+zip": true, "application/java-archive": true,
}

// precompressed reports whether an HTTP response head announces a payload
// that is compressed already: a Content-Encoding other than identity (a
// head from ResponseHead has none: it stores the decoded body), or a
// media type in compressedMediaTypes or under video/ or audio/ (but not
// uncompressed audio such as audio/wav).
func precompressed(head []byte) bool {
	for line := range bytes.SplitSeq(head, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.ToLower(bytes.TrimSpace(value))
		switch {
		case bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Encoding")):
			if len(value) > 0 && !bytes.Equal(value, []byte("identity")) {
				return true
			}
		case bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Type")):
			mt, _, _ := bytes.Cut(value, []byte(";"))
			mt = bytes.TrimSpace(mt)
			switch {
			case compressedMediaTypes[string(mt)]:
				return true
			case bytes.HasPrefix(mt, []byte("video/")):
				return true
			case bytes.HasPrefix(mt, []byte("audio/")):
				sub := string(mt[len("audio/"):])
				if sub != "wav" && sub != "x-wav" && sub != "wave" && sub != "aiff" && sub != "x-aiff" && sub != "basic" && sub != "l16" {
					return true
				}
			}
		}
	}
	return false
}
