package main

import "testing"

func TestByteSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "1KiB": 1 << 10, "64MiB": 64 << 20, "2g": 2 << 30, " 3 MB ": 3 << 20, "5B": 5} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1TiB", "KiB", "1.5MiB", "9999999999GiB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) accepted: %d", in, b)
		}
	}
}
