package procsup

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSplitLines(t *testing.T) {
	cases := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"empty", "", 8, nil},
		{"plain", "a\nb\n", 8, []string{"a", "b"}},
		{"unterminated last line", "a\nb", 8, []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", 8, []string{"a", "b"}},
		{"lone cr kept", "a\rb\n", 8, []string{"a\rb"}},
		{"empty lines", "\n\n", 8, []string{"", ""}},
		{"exact multiple of max", "abcdefgh\n", 4, []string{"abcd", "efgh"}},
		{"long line with tail", "abcdefghi\nj\n", 4, []string{"abcd", "efgh", "i", "j"}},
		{"long line unterminated", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"empty line after chunked line", "abcd\n\n", 4, []string{"abcd", ""}},
		{"crlf across chunk boundary", "abc\r\nd\n", 4, []string{"abc", "d"}},
		{"cr at chunk end not followed by lf", "abc\rdef\n", 4, []string{"abc", "\rdef"}},
		{"max one", "ab\nc", 1, []string{"a", "b", "c"}},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"data+EOF": iotest.DataErrReader,
		"half":     iotest.HalfReader,
	}
	for _, c := range cases {
		for rname, wrap := range readers {
			t.Run(c.name+"/"+rname, func(t *testing.T) {
				var got []string
				err := splitLines(wrap(strings.NewReader(c.in)), c.max, func(b []byte) {
					if len(b) > c.max {
						t.Errorf("chunk of %d bytes exceeds max %d", len(b), c.max)
					}
					got = append(got, string(b))
				})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("got %q, want %q", got, c.want)
				}
			})
		}
	}
}

func TestSplitLinesReadError(t *testing.T) {
	boom := errors.New("boom")
	var got []string
	r := io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom))
	err := splitLines(r, 8, func(b []byte) { got = append(got, string(b)) })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// fill is an endless stream of one byte that allocates nothing.
type fill byte

func (f fill) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

// Memory stays at the one buffer however long the line: 10 MB without a
// newline costs the same single allocation as a short line.
func TestSplitLinesMemoryIsBounded(t *testing.T) {
	const maxLine = 64 << 10
	chunks := 0
	allocs := testing.AllocsPerRun(1, func() {
		chunks = 0
		r := io.LimitReader(fill('a'), 10<<20)
		if err := splitLines(r, maxLine, func([]byte) { chunks++ }); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 { // the buffer, and the LimitReader
		t.Errorf("%v allocations for a 10 MB line", allocs)
	}
	if chunks != (10<<20)/maxLine {
		t.Errorf("%d chunks", chunks)
	}
}
