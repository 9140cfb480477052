package jsonscan

import "encoding/binary"

// Depth returns how deeply the objects and arrays of the JSON text b nest:
// 0 for a scalar, 1 for {} or [], 2 for {"a":[]}, and so on. It stops
// counting as soon as the nesting passes limit, returning limit+1 then.
//
// Unlike Parser and Decode it walks b in one flat loop — no recursion, no
// allocation, the insides of strings skipped — so a caller can refuse input
// nested too deeply before anything recursive meets it: a recursive decoder,
// validator or hash runs one stack frame per level, and a guest parsing its
// request in WebAssembly overflows its stack long before MaxDepth. It does
// not validate b: on text that is not JSON the count is approximate, and
// the parse that follows reports the syntax error.
func Depth(b []byte, limit int) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			// Skip to the closing quote, 8 plain bytes at a time; an escape
			// takes the byte after it along.
			for i++; i < len(b); i++ {
				for i+8 <= len(b) && !SpecialIn8(binary.LittleEndian.Uint64(b[i:])) {
					i += 8
				}
				if i >= len(b) {
					break
				}
				if c := b[i]; c == '\\' {
					i++
				} else if c == '"' {
					break
				}
			}
		case '{', '[':
			if depth++; depth > deepest {
				if deepest = depth; deepest > limit {
					return limit + 1
				}
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}
