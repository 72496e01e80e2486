package storage

// AppendWARCField appends one application/warc-fields line, "name: value"
// and CRLF, to dst, the block format of a metadata record
// (Exchange.Metadata). A CR, LF or other control character in value would
// end or corrupt the line: it is percent-encoded (%0D, %0A, ...); any
// other value is written as it is. name must be a token (Heritrix's names:
// "outlink", "via", "hopsFromSeed").
func AppendWARCField(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c < 0x20 || c == 0x7f {
			const hex = "0123456789ABCDEF"
			dst = append(dst, '%', hex[c>>4], hex[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, "\r\n"...)
}
