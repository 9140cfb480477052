package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDepth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{``, 0}, {`1`, 0}, {`"[[["`, 0}, {`{}`, 1}, {`[]`, 1}, {`{"a":[]}`, 2},
		{`[[],[[]],{}]`, 3},
		// Brackets inside strings, escaped quotes and backslashes do not count.
		{`{"a":"[{\"[","b":"\\","c":[1]}`, 2},
		{`["0123456789abcdef{[{[{[{[", "x\"[[[[[[[[[[[[[[[["]`, 1},
		{`{"deep":[[[[[[[[[[]]]]]]]]]]}`, 11},
	} {
		if got := Depth([]byte(c.in), 100); got != c.want {
			t.Errorf("Depth(%s) = %d, want %d", c.in, got, c.want)
		}
	}
	// It stops counting past the limit.
	deep := []byte(strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000))
	if got := Depth(deep, 64); got != 65 {
		t.Errorf("a million levels: %d, want 65", got)
	}
	if got := Depth([]byte(strings.Repeat(`{"a":`, 64)+"1"+strings.Repeat("}", 64)), 64); got != 64 {
		t.Errorf("64 levels under a limit of 64: %d", got)
	}
}

// FuzzDepth holds Depth to the nesting encoding/json sees in valid JSON.
func FuzzDepth(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			Depth(b, 10) // any input: no panic
			return
		}
		if got, want := Depth(b, MaxDepth), depthOf(v); got != want {
			t.Fatalf("Depth(%q) = %d, want %d", b, got, want)
		}
	})
}

func depthOf(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		for _, e := range v {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}
