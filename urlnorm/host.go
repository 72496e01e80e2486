package urlnorm

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// idnaProfile is UTS #46 ToASCII as the WHATWG "domain to ASCII" calls it:
// the lookup mapping (RFC 5891 section 5), nontransitional, Bidi and
// ContextJ checks on, but CheckHyphens and UseSTD3ASCIIRules off, because
// hosts such as "r3---sn-abc.example" and "my_host.example" are in real use
// and browsers accept them.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.CheckJoiners(true),
)

// forbiddenDomain marks the WHATWG "forbidden domain code points" (ASCII
// part): C0 controls, space, # % / : < > ? @ [ \ ] ^ | and DEL.
var forbiddenDomain = func() (t [256]bool) {
	for c := 0; c < 0x21; c++ {
		t[c] = true
	}
	for _, c := range "#%/:<>?@[\\]^|\x7f" {
		t[c] = true
	}
	return t
}()

// host is the standard's "host parser" for special URLs: it appends the
// serialized host of s to out.buf.
func (ps *parser) host(out *parsed, s string) error {
	if s[0] == '[' {
		if len(s) < 2 || s[len(s)-1] != ']' {
			return cause(ErrInvalidIPv6, "unterminated '[' in host "+quoteShort(s))
		}
		var a [8]uint16
		if err := parseIPv6(&a, s[1:len(s)-1]); err != nil {
			return err
		}
		if ps.mappedIPv4 && a[0]|a[1]|a[2]|a[3]|a[4] == 0 && a[5] == 0xffff {
			out.buf = appendIPv4(out.buf, uint32(a[6])<<16|uint32(a[7]))
			return nil
		}
		out.buf = append(out.buf, '[')
		out.buf = appendIPv6(out.buf, &a)
		out.buf = append(out.buf, ']')
		return nil
	}
	// An ASCII domain is only lowercased by "domain to ASCII" (the
	// standard no longer runs UTS #46 on it, so "xn--a" with invalid
	// Punycode is accepted as browsers accept it).
	start := len(out.buf)
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == '%' {
			simple = false
			break
		}
	}
	var err error
	if simple {
		out.buf, err = appendASCIIDomain(out.buf, s)
	} else {
		out.buf, err = appendDomainToASCII(out.buf, s)
	}
	if err != nil {
		out.buf = out.buf[:start]
		return err
	}
	h := out.buf[start:]
	if endsInNumber(h) {
		v, err := parseIPv4(h)
		if err != nil {
			out.buf = out.buf[:start]
			return err
		}
		out.buf = appendIPv4(out.buf[:start], v)
		return nil
	}
	// Policy: "example.com." names the same host as "example.com" (the
	// root label). Only one dot is removed, and only when the rest is a
	// non-empty name not itself ending in '.', so that the result is a
	// fixed point.
	if !ps.exact && len(h) >= 2 && h[len(h)-1] == '.' && h[len(h)-2] != '.' {
		out.buf = out.buf[:len(out.buf)-1]
	}
	return nil
}

func forbiddenHost(s string, c byte) error {
	return cause(ErrInvalidHost, "host "+quoteShort(s)+" contains the forbidden "+describeByte(c))
}

// appendASCIIDomain appends the lowercased ASCII domain s, rejecting
// forbidden domain code points.
func appendASCIIDomain(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if forbiddenDomain[c] {
			return b, forbiddenHost(s, c)
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b, nil
}

// appendDomainToASCII percent-decodes s and, unless the result is ASCII,
// runs UTS #46 ToASCII on it.
func appendDomainToASCII(b []byte, s string) ([]byte, error) {
	if strings.IndexByte(s, '%') >= 0 {
		s = percentDecode(s)
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		if s == "" {
			return b, cause(ErrMissingHost, "host is empty after percent-decoding")
		}
		return appendASCIIDomain(b, s)
	}
	if !utf8.ValidString(s) {
		return b, cause(ErrInvalidHost, "host is not valid UTF-8 (after percent-decoding)")
	}
	// UTS #46 15.1 maps U+1E9E (capital sharp s) to U+00DF; the 15.0
	// tables x/net/idna uses with Go < 1.27 map it to "ss", which would
	// merge "ẞ.com" into the different domain "ss.com".
	s = strings.ReplaceAll(s, "\u1e9e", "\u00df")
	mapped, err := idnaProfile.ToASCII(s)
	if err != nil {
		return b, cause(ErrInvalidIDN, err.Error())
	}
	if mapped == "" {
		return b, cause(ErrMissingHost, "host "+quoteShort(s)+" is empty after IDNA mapping")
	}
	for i := 0; i < len(mapped); i++ {
		if forbiddenDomain[mapped[i]] {
			return b, forbiddenHost(mapped, mapped[i])
		}
	}
	return append(b, mapped...), nil
}

// percentDecode decodes every valid %XX escape; others stay as they are.
func percentDecode(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// endsInNumber is the standard's "ends in a number checker".
func endsInNumber(h []byte) bool {
	if len(h) > 0 && h[len(h)-1] == '.' {
		if len(h) == 1 {
			return false
		}
		h = h[:len(h)-1]
	}
	last := h
	if i := lastIndexByte(h, '.'); i >= 0 {
		last = h[i+1:]
	}
	if len(last) == 0 {
		return false
	}
	digits := true
	for _, c := range last {
		if c < '0' || c > '9' {
			digits = false
			break
		}
	}
	if digits {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

func lastIndexByte(b []byte, c byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// parseIPv4Number parses one part: decimal, "0x" hex or leading-zero octal.
// Values are capped just above 2^32 so that long inputs cannot overflow.
func parseIPv4Number(s []byte) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(s) >= 2 && s[0] == '0' && s[1]|0x20 == 'x':
		base, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0':
		base, s = 8, s[1:]
	}
	var v uint64
	for _, c := range s {
		d, ok := unhex(c)
		if !ok || uint64(d) >= base {
			return 0, false
		}
		if v <= 1<<32 {
			v = v*base + uint64(d)
		}
	}
	return v, true
}

// parseIPv4 is the standard's "IPv4 parser" (without validation errors).
func parseIPv4(h []byte) (uint32, error) {
	if len(h) > 0 && h[len(h)-1] == '.' {
		h = h[:len(h)-1]
	}
	whole := h
	var nums [4]uint64
	n := 0
	for {
		part := h
		i := indexByte(h, '.')
		if i >= 0 {
			part = h[:i]
		}
		if n == 4 {
			return 0, cause(ErrInvalidIPv4, "more than four parts in "+quoteShort(string(whole)))
		}
		v, ok := parseIPv4Number(part)
		if !ok {
			return 0, cause(ErrInvalidIPv4, "part "+quoteShort(string(part))+" is not a decimal, octal (0...) or hex (0x...) number")
		}
		nums[n] = v
		n++
		if i < 0 {
			break
		}
		h = h[i+1:]
	}
	for i := 0; i < n-1; i++ {
		if nums[i] > 255 {
			return 0, cause(ErrInvalidIPv4, "part "+strconv.Itoa(i+1)+" is above 255")
		}
	}
	if nums[n-1] >= 1<<(8*(5-n)) {
		return 0, cause(ErrInvalidIPv4, "last part is too large for a "+strconv.Itoa(n)+"-part address")
	}
	v := nums[n-1]
	for i := 0; i < n-1; i++ {
		v += nums[i] << (8 * (3 - i))
	}
	return uint32(v), nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func appendIPv4(b []byte, v uint32) []byte {
	for i := 3; i >= 0; i-- {
		b = appendInt(b, int(v>>(8*i))&0xff)
		if i > 0 {
			b = append(b, '.')
		}
	}
	return b
}

// parseIPv6 is the standard's "IPv6 parser".
func parseIPv6(a *[8]uint16, s string) error {
	bad := func(why string) error {
		return cause(ErrInvalidIPv6, why+" in "+quoteShort("["+s+"]"))
	}
	piece, compress, p := 0, -1, 0
	at := func(i int) int {
		if i < len(s) {
			return int(s[i])
		}
		return -1
	}
	if at(p) == ':' {
		if at(p+1) != ':' {
			return bad("leading single ':'")
		}
		p += 2
		piece++
		compress = piece
	}
	for at(p) != -1 {
		if piece == 8 {
			return bad("more than eight pieces")
		}
		if at(p) == ':' {
			if compress != -1 {
				return bad("more than one \"::\"")
			}
			p++
			piece++
			compress = piece
			continue
		}
		value, length := 0, 0
		for length < 4 && at(p) != -1 && isHex(s[p]) {
			d, _ := unhex(s[p])
			value = value*16 + int(d)
			p++
			length++
		}
		if at(p) == '.' {
			if length == 0 {
				return bad("empty IPv4 part")
			}
			p -= length
			if piece > 6 {
				return bad("embedded IPv4 address too late")
			}
			seen := 0
			for at(p) != -1 {
				v := -1
				if seen > 0 {
					if at(p) == '.' && seen < 4 {
						p++
					} else {
						return bad("malformed embedded IPv4 address")
					}
				}
				if c := at(p); c < '0' || c > '9' {
					return bad("embedded IPv4 part is not a decimal number")
				}
				for c := at(p); c >= '0' && c <= '9'; c = at(p) {
					n := c - '0'
					switch v {
					case -1:
						v = n
					case 0:
						return bad("leading zero in embedded IPv4 part")
					default:
						v = v*10 + n
					}
					if v > 255 {
						return bad("embedded IPv4 part above 255")
					}
					p++
				}
				a[piece] = a[piece]<<8 | uint16(v)
				seen++
				if seen == 2 || seen == 4 {
					piece++
				}
			}
			if seen != 4 {
				return bad("embedded IPv4 address needs four parts")
			}
			break
		} else if at(p) == ':' {
			p++
			if at(p) == -1 {
				return bad("trailing ':'")
			}
		} else if at(p) != -1 {
			return bad("unexpected " + describeByte(s[p]))
		}
		a[piece] = uint16(value)
		piece++
	}
	if compress != -1 {
		swaps := piece - compress
		piece = 7
		for piece != 0 && swaps > 0 {
			a[piece], a[compress+swaps-1] = a[compress+swaps-1], a[piece]
			piece--
			swaps--
		}
	} else if piece != 8 {
		return bad("fewer than eight pieces without \"::\"")
	}
	return nil
}

// appendIPv6 is the standard's IPv6 serializer: lowercase hex, the first
// longest run of two or more zero pieces compressed to "::".
func appendIPv6(b []byte, a *[8]uint16) []byte {
	compress, best := -1, 1
	for i := 0; i < 8; {
		if a[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && a[j] == 0 {
			j++
		}
		if j-i > best {
			compress, best = i, j-i
		}
		i = j
	}
	const lowerHex = "0123456789abcdef"
	ignore0 := false
	for i := 0; i < 8; i++ {
		if ignore0 && a[i] == 0 {
			continue
		}
		ignore0 = false
		if compress == i {
			if i == 0 {
				b = append(b, "::"...)
			} else {
				b = append(b, ':')
			}
			ignore0 = true
			continue
		}
		v := a[i]
		started := false
		for sh := 12; sh >= 0; sh -= 4 {
			d := (v >> sh) & 15
			if d != 0 || started || sh == 0 {
				b = append(b, lowerHex[d])
				started = true
			}
		}
		if i != 7 {
			b = append(b, ':')
		}
	}
	return b
}
