package fetch

// parseSrcset calls fn with the URL of each image candidate of a srcset
// (or imagesrcset) value, in order, following the HTML Standard's "parse
// a srcset attribute" algorithm: candidates are separated by commas, a URL
// runs to the next whitespace (so it may contain commas, except at its
// end), and a candidate whose descriptors are invalid ("2y", "1x 2x",
// "0w", a height without a width) is dropped, as browsers drop it.
func parseSrcset(s []byte, fn func(url []byte)) {
	pos := 0
	for {
		// Splitting loop: skip whitespace and commas.
		for pos < len(s) && (isSpace(s[pos]) || s[pos] == ',') {
			pos++
		}
		if pos >= len(s) {
			return
		}
		start := pos
		for pos < len(s) && !isSpace(s[pos]) {
			pos++
		}
		url := s[start:pos]
		valid := true
		if url[len(url)-1] == ',' {
			for len(url) > 0 && url[len(url)-1] == ',' {
				url = url[:len(url)-1]
			}
		} else {
			var d descriptors
			pos = d.tokenize(s, pos)
			valid = d.valid()
		}
		if valid && len(url) > 0 {
			fn(url)
		}
	}
}

// descriptors parses a candidate's descriptors: at most one of a width
// ("100w") or a density ("1.5x"), and a height ("200h") only with a width.
type descriptors struct {
	width, density, height bool
	bad                    bool
}

// tokenize runs the descriptor tokenizer from s[pos], checking each
// descriptor as it ends, and returns the position after the candidate.
func (d *descriptors) tokenize(s []byte, pos int) int {
	for pos < len(s) && isSpace(s[pos]) {
		pos++
	}
	const (
		inDescriptor = iota
		inParens
		afterDescriptor
	)
	state := inDescriptor
	start := pos // of the current descriptor
	for ; ; pos++ {
		if pos >= len(s) {
			if state != afterDescriptor && pos > start {
				d.check(s[start:pos])
			}
			return pos
		}
		c := s[pos]
		switch state {
		case inDescriptor:
			switch {
			case isSpace(c):
				if pos > start {
					d.check(s[start:pos])
				}
				state = afterDescriptor
			case c == ',':
				if pos > start {
					d.check(s[start:pos])
				}
				return pos + 1
			case c == '(':
				state = inParens
			}
		case inParens:
			if c == ')' {
				state = inDescriptor
			}
		case afterDescriptor:
			if !isSpace(c) {
				state = inDescriptor
				start = pos
				pos-- // reconsume c
			}
		}
	}
}

// check applies one descriptor (the descriptor parser's step for it).
func (d *descriptors) check(desc []byte) {
	last, num := desc[len(desc)-1], desc[:len(desc)-1]
	switch {
	case last == 'w' && isNonNegativeInteger(num):
		if d.width || d.density || allZero(num) {
			d.bad = true
		}
		d.width = true
	case last == 'x' && isFloat(num):
		if d.width || d.density || d.height || num[0] == '-' && !allZero(num[1:]) {
			d.bad = true
		}
		d.density = true
	case last == 'h' && isNonNegativeInteger(num):
		if d.height || d.density || allZero(num) {
			d.bad = true
		}
		d.height = true
	default:
		d.bad = true
	}
}

func (d *descriptors) valid() bool { return !d.bad && (!d.height || d.width) }

// isNonNegativeInteger reports whether b is a valid non-negative integer:
// one or more ASCII digits.
func isNonNegativeInteger(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// allZero reports whether the number b (digits, possibly with '.' and an
// exponent) is zero: all its mantissa digits are '0'.
func allZero(b []byte) bool {
	for _, c := range b {
		if c == 'e' || c == 'E' {
			return true
		}
		if c != '0' && c != '.' {
			return false
		}
	}
	return true
}

// isFloat reports whether b is a valid floating-point number: an optional
// '-', digits and/or '.' and digits, an optional exponent.
func isFloat(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i - j
	}
	intDigits := digits()
	fracDigits := 0
	if i < len(b) && b[i] == '.' {
		i++
		if fracDigits = digits(); fracDigits == 0 {
			return false
		}
	}
	if intDigits == 0 && fracDigits == 0 {
		return false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}
