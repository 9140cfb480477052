//go:build ignore

// Command tinystyle writes a command module in the shape TinyGo's default
// wasip1 build (and Rust's or C's for a binary) gives an Extism MCP
// servlet: _start exported, no _initialize, and describe and call that
// work without _start having run — as TinyGo's //export functions can,
// TinyGo initialising most globals at compile time. Go's toolchain cannot
// emit this shape (its exports trap until _start ran), so it is assembled
// here byte by byte.
//
// _start calls proc_exit(0), as a command does when main returns: a host
// that ran it would find the instance closed and every export failing.
// The module working under plugboard is the proof that the host calls its
// exports without running _start.
//
//	go run ./testdata/plugins/cmdmodule/tinystyle/main.go OUT.wasm
package main

import (
	"fmt"
	"os"
)

// manifest is describe's answer: one tool, with everything plugboard's
// house rules ask for, so the only advice the kit can give is about the
// module's build (no embedded manifest section).
const manifest = `{"plugin":{"name":"tinystyle","version":"0.1.0"},"tools":[{"name":"tiny_status",` +
	`"description":"Use when: checking a command module answers without its _start.\nRequired: none\nOptional: none\n` +
	`Next: read status.\nAvoid: expecting anything but ok.",` +
	`"inputSchema":{"type":"object","properties":{},"additionalProperties":false},` +
	`"outputSchema":{"type":"object","properties":{"status":{"type":"string","description":"always ok"}},"required":["status"]}}]}`

// result is call's answer, whatever the arguments.
const result = `{"content":[{"type":"text","text":"{\"status\":\"ok\"}"}],"structuredContent":{"status":"ok"}}`

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./testdata/plugins/cmdmodule/tinystyle/main.go OUT.wasm")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], module(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const (
	i32, i64 = 0x7f, 0x7e
	// Type indices.
	typeAlloc  = 0 // (i64) -> i64
	typeStore  = 1 // (i64, i32) -> ()
	typeOutput = 2 // (i64, i64) -> ()
	typeExport = 3 // () -> i32
	typeExit   = 4 // (i32) -> ()
	typeStart  = 5 // () -> ()
	// Function indices: the imports, then describe, call and _start.
	fnAlloc, fnStore, fnOutput, fnExit = 0, 1, 2, 3
	fnDescribe, fnCall, fnStart        = 4, 5, 6
)

func module() []byte {
	types := vec(
		[]byte{0x60, 1, i64, 1, i64},
		[]byte{0x60, 2, i64, i32, 0},
		[]byte{0x60, 2, i64, i64, 0},
		[]byte{0x60, 0, 1, i32},
		[]byte{0x60, 1, i32, 0},
		[]byte{0x60, 0, 0},
	)
	imports := vec(
		imp("extism:host/env", "alloc", typeAlloc),
		imp("extism:host/env", "store_u8", typeStore),
		imp("extism:host/env", "output_set", typeOutput),
		imp("wasi_snapshot_preview1", "proc_exit", typeExit),
	)
	funcs := vec([]byte{typeExport}, []byte{typeExport}, []byte{typeStart})
	exports := vec(
		exp("describe", 0x00, fnDescribe),
		exp("call", 0x00, fnCall),
		exp("_start", 0x00, fnStart),
		exp("memory", 0x02, 0),
	)
	// _start: proc_exit(0), as a command whose main returned.
	start := []byte{0, 0x41, 0, 0x10, fnExit, 0x0b}
	code := vec(sized(outputBody(manifest)), sized(outputBody(result)), sized(start))
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = section(out, 1, types)
	out = section(out, 2, imports)
	out = section(out, 3, funcs)
	out = section(out, 5, vec([]byte{0x00, 1})) // one memory of one page
	out = section(out, 7, exports)
	return section(out, 10, code)
}

// outputBody is: p := alloc(len); store_u8(p+i, s[i]) for each byte;
// output_set(p, len); return 0.
func outputBody(s string) []byte {
	const (
		localGet, localSet = 0x20, 0x21
		i32Const, i64Const = 0x41, 0x42
		i64Add, call, end  = 0x7c, 0x10, 0x0b
	)
	b := []byte{1, 1, i64} // one local: p i64
	b = sleb(append(b, i64Const), int64(len(s)))
	b = append(b, call, fnAlloc, localSet, 0)
	for i := range len(s) {
		b = append(b, localGet, 0)
		b = sleb(append(b, i64Const), int64(i))
		b = append(b, i64Add)
		b = sleb(append(b, i32Const), int64(s[i]))
		b = append(b, call, fnStore)
	}
	b = append(b, localGet, 0)
	b = sleb(append(b, i64Const), int64(len(s)))
	b = append(b, call, fnOutput)
	b = sleb(append(b, i32Const), 0)
	return append(b, end)
}

func imp(module, field string, typ byte) []byte {
	return append(append(name(module), name(field)...), 0x00, typ)
}

func exp(field string, kind, index byte) []byte {
	return append(name(field), kind, index)
}

func name(s string) []byte { return append(uleb(nil, uint64(len(s))), s...) }

func vec(items ...[]byte) []byte {
	out := uleb(nil, uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func sized(b []byte) []byte { return append(uleb(nil, uint64(len(b))), b...) }

func section(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = uleb(out, uint64(len(payload)))
	return append(out, payload...)
}

func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
