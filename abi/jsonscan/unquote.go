package jsonscan

import (
	"encoding/binary"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote returns the value of a JSON string whose raw contents (between
// the quotes, as Str returns them; Str has checked the escapes) are s,
// exactly as encoding/json decodes it: escapes resolved, a surrogate pair
// combined, a lone surrogate and every byte of invalid UTF-8 replaced by
// U+FFFD. ok is false for contents Str would have refused.
//
// Without it the fast decoders handed any string holding an escape — a
// newline or a quote in an agent's text, which is most code — to
// encoding/json, and with it the whole argument object (≈ 40 µs per KiB in
// WebAssembly).
func Unquote(s []byte) (_ []byte, ok bool) {
	r := plainPrefix(s, 0)
	for r < len(s) {
		c := s[r]
		if c == '\\' || c == '"' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			r++
			continue
		}
		rr, size := utf8.DecodeRune(s[r:])
		if rr == utf8.RuneError && size == 1 {
			break
		}
		r += size
	}
	if r == len(s) {
		return s, true
	}
	b := make([]byte, r, len(s)+2*utf8.UTFMax)
	copy(b, s[:r])
	for r < len(s) {
		if start := r; s[r] >= ' ' && s[r] != '\\' && s[r] != '"' && s[r] < utf8.RuneSelf {
			// A run of plain ASCII is copied at once: the escapes of
			// source code are a few bytes apart.
			r = plainPrefix(s, r)
			b = append(b, s[start:r]...)
			continue
		}
		switch c := s[r]; {
		case c == '\\':
			r++
			if r >= len(s) {
				return nil, false
			}
			switch e := s[r]; e {
			case '"', '\\', '/':
				b = append(b, e)
				r++
			case 'b':
				b = append(b, '\b')
				r++
			case 'f':
				b = append(b, '\f')
				r++
			case 'n':
				b = append(b, '\n')
				r++
			case 'r':
				b = append(b, '\r')
				r++
			case 't':
				b = append(b, '\t')
				r++
			case 'u':
				rr := hex4(s[r+1:])
				if rr < 0 {
					return nil, false
				}
				r += 5
				if utf16.IsSurrogate(rr) {
					if r+1 < len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							r += 6
							break
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			default:
				return nil, false
			}
		case c == '"' || c < ' ':
			return nil, false
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return b, true
}

// hex4 decodes the four hex digits at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// plainPrefix returns the end of the run of plain ASCII (no quote,
// backslash or control character) in s that starts at i, 8 bytes at a
// time where it can.
func plainPrefix(s []byte, i int) int {
	const highs = 0x8080808080808080
	for i+8 <= len(s) {
		if x := binary.LittleEndian.Uint64(s[i:]); SpecialIn8(x) || x&highs != 0 {
			break
		}
		i += 8
	}
	for i < len(s) {
		if c := s[i]; c < ' ' || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	return i
}
