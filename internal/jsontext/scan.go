package jsontext

// ScanString reads the JSON string token that starts at b[i] (its opening
// quote): it returns the index just past the closing quote and true, or
// the index where the token stopped being a JSON string and false (a
// control byte, an unknown escape, a \u without four hex digits, no closing
// quote). It does not check that the bytes are UTF-8.
func ScanString(b []byte, i int) (int, bool) {
	i++ // the opening quote
	for i < len(b) {
		switch ch := b[i]; {
		case ch == '"':
			return i + 1, true
		case ch < 0x20:
			return i, false
		case ch == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, false
				}
				for _, h := range b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		default:
			i++
		}
	}
	return i, false
}

// ScanNumber reads the JSON number token at b[i]: it returns the index
// just past it and true, or where it stopped being a JSON number and
// false (no digit, a leading zero, a fraction or exponent without digits).
func ScanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	first := i
	if n := digits(); n == 0 || n > 1 && b[first] == '0' {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, false
		}
	}
	return i, true
}
