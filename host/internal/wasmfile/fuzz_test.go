package wasmfile

import (
	"bytes"
	"testing"
)

// FuzzParse feeds arbitrary bytes to every reader of this package: a plugin
// file is untrusted input, so none of them may panic or loop.
// Run longer with: go test -fuzz FuzzParse ./host/internal/wasmfile
func FuzzParse(f *testing.F) {
	f.Add(testModule())
	f.Add(magic)
	f.Add(append(append([]byte(nil), magic...), 0x00, 0x05, 0x04, 'n', 'a', 'm', 'e'))
	f.Fuzz(func(t *testing.T, bin []byte) {
		_, _ = Parse(bin)
		want, wantOK, werr := CustomSection(bin, "plugboard.manifest")
		got, ok, err := ReadCustomSection(bytes.NewReader(bin), int64(len(bin)), "plugboard.manifest")
		if werr == nil && (err != nil || ok != wantOK || !bytes.Equal(got, want)) {
			t.Fatalf("ReadCustomSection = %q %v %v; CustomSection = %q %v", got, ok, err, want, wantOK)
		}
		if out, err := Instrument(bin); err == nil {
			// What Instrument accepts it must also be able to read back.
			if _, err := Parse(out); err != nil {
				t.Fatalf("instrumented output does not parse: %v", err)
			}
		}
	})
}
