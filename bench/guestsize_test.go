package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/build/pluginbuild"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// BenchmarkGuestSize reports the size of every first-party plugin as
// `plugboard plugin build` writes it (bytes), and prints where echo's code
// goes: the bytes of function bodies per Go package, read from the name
// section of an echo built as plugin build builds it (echo qualifies for
// the plugboard_typed tag: build/pluginbuild's TestTypedBuild) but without
// -s, which drops that section and nothing else the breakdown counts.
//
//	go test -run '^$' -bench '^BenchmarkGuestSize$' -benchtime 1x ./bench/
func BenchmarkGuestSize(b *testing.B) {
	srcs := firstPartyPlugins(b)
	_, wasm := buildtest.Plugins(b, srcs...)
	for _, src := range srcs {
		name := filepath.Base(src)
		b.Run(name, func(b *testing.B) {
			fi, err := os.Stat(wasm[name])
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
			}
			b.ReportMetric(float64(fi.Size()), "bytes")
			b.ReportMetric(0, "ns/op")
		})
	}
	b.Run("echo-by-package", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "echo.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-w", "-tags", pluginbuild.TypedTag, "-o", out, ".")
		cmd.Dir = filepath.Join(buildtest.Root(b), "plugins", "echo")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, msg)
		}
		module, err := os.ReadFile(out)
		if err != nil {
			b.Fatal(err)
		}
		sizes, code, data, err := codeByPackage(module)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
		}
		b.ReportMetric(float64(code), "code-bytes")
		b.ReportMetric(float64(data), "data-bytes")
		b.ReportMetric(0, "ns/op")
		type row struct {
			pkg   string
			bytes int
		}
		var rows []row
		for p, n := range sizes {
			rows = append(rows, row{p, n})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].bytes > rows[j].bytes })
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "echo.wasm code by package (of %d code bytes; data section %d bytes):\n", code, data)
		for i, r := range rows {
			if i == 15 {
				break
			}
			fmt.Fprintf(&buf, "  %9d  %5.1f%%  %s\n", r.bytes, 100*float64(r.bytes)/float64(code), r.pkg)
		}
		fmt.Print(buf.String())
	})
}

// codeByPackage sums the function bodies of a WebAssembly module by the Go
// package their name (from the name section) belongs to, and returns the
// code and data sections' sizes.
func codeByPackage(m []byte) (sizes map[string]int, code, data int, _ error) {
	if len(m) < 8 || string(m[:4]) != "\x00asm" {
		return nil, 0, 0, fmt.Errorf("not a WebAssembly module")
	}
	i := 8
	leb := func() int {
		r, shift := 0, 0
		for i < len(m) {
			c := m[i]
			i++
			r |= int(c&0x7f) << shift
			shift += 7
			if c < 0x80 {
				break
			}
		}
		return r
	}
	imported := 0
	var bodies []int
	names := map[int]string{}
	for i < len(m) {
		id := m[i]
		i++
		size := leb()
		end := i + size
		switch id {
		case 2: // imports: count the functions, which come first in the index space
			for n := leb(); n > 0; n-- {
				i += leb() // module
				i += leb() // name
				kind := m[i]
				i++
				switch kind {
				case 0:
					imported++
					leb()
				case 1: // table: reftype, limits
					i++
					if flags := leb(); flags&1 != 0 {
						leb()
						leb()
					} else {
						leb()
					}
				case 2: // memory: limits
					if flags := leb(); flags&1 != 0 {
						leb()
						leb()
					} else {
						leb()
					}
				case 3: // global: valtype, mutability
					i += 2
				}
			}
		case 10:
			code = size
			for n := leb(); n > 0; n-- {
				l := leb()
				bodies = append(bodies, l)
				i += l
			}
		case 11:
			data = size
		case 0:
			nameLen := leb()
			if string(m[i:i+nameLen]) == "name" {
				i += nameLen
				for i < end {
					sub := m[i]
					i++
					subEnd := i + leb()
					if sub == 1 {
						for n := leb(); n > 0; n-- {
							idx := leb()
							l := leb()
							names[idx] = string(m[i : i+l])
							i += l
						}
					}
					i = subEnd
				}
			}
		}
		i = end
	}
	if len(names) == 0 {
		return nil, 0, 0, fmt.Errorf("the module has no name section")
	}
	sizes = map[string]int{}
	for f, n := range bodies {
		sizes[goPackage(names[imported+f])] += n
	}
	return sizes, code, data, nil
}

// goPackage is the package part of a Go symbol as the Go toolchain writes
// it in the name section, where a path's '/' is '_'
// ("encoding_json.__decodeState_.object" → "encoding_json",
// "github.com_plugboard_plugboard_sdk_guest.exportCall" →
// "github.com_plugboard_plugboard_sdk_guest").
func goPackage(sym string) string {
	if sym == "" {
		return "?"
	}
	dot := strings.IndexByte(sym, '.')
	if dot < 0 {
		return sym
	}
	// A path starting with a domain: "github.com_…" (letters, then '_').
	rest := sym[dot+1:]
	tld := strings.IndexFunc(rest, func(r rune) bool { return r < 'a' || r > 'z' })
	if tld > 0 && rest[tld] == '_' {
		if end := strings.IndexByte(rest[tld:], '.'); end >= 0 {
			return sym[:dot+1+tld+end]
		}
		return sym
	}
	return sym[:dot]
}
