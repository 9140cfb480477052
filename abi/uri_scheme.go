package abi

// schemeURI reports whether s is a URI with a scheme, as net/url sees it in
// practice, without net/url: a scheme of ALPHA *( ALPHA / DIGIT / "+" / "-"
// / "." ) before the first ':', no ASCII control characters, and well-formed
// %XX escapes outside the query. net/url also checks the authority (ports,
// IPv6 brackets), which this does not. WebAssembly guests use it
// (uri_wasip1.go); TestSchemeURI holds it to net/url.
func schemeURI(s string) bool {
	query, fragment := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return false
		case c == '?' && !fragment:
			query = true
		case c == '#':
			query, fragment = false, true
		case c == '%' && !query:
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return false
			}
		case c == ':':
			return i > 0
		default:
			return false
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
