package runtime_test

// tinyModule assembles a plugin small enough to compile in milliseconds:
// for each export (name, output), a function that writes output through
// the Extism kernel (alloc, store_u8, output_set) and returns 0. Two
// modules whose outputs have the same length differ only in constants, so
// one's machine code runs in the other's place — what the cache tests
// plant.
func tinyModule(exports ...[2]string) []byte {
	const (
		typeAlloc  = iota // (i64) -> i64
		typeStore         // (i64, i32) -> ()
		typeOutput        // (i64, i64) -> ()
		typeExport        // () -> i32
	)
	const i32, i64 = 0x7f, 0x7e
	types := vec(
		[]byte{0x60, 1, i64, 1, i64},
		[]byte{0x60, 2, i64, i32, 0},
		[]byte{0x60, 2, i64, i64, 0},
		[]byte{0x60, 0, 1, i32},
	)
	imports := vec(
		kernelImport("alloc", typeAlloc),
		kernelImport("store_u8", typeStore),
		kernelImport("output_set", typeOutput),
	)
	const firstFunc = 3 // after the imports
	var funcs, bodies, exps [][]byte
	for i, e := range exports {
		funcs = append(funcs, []byte{typeExport})
		bodies = append(bodies, withSize(outputBody(e[1])))
		exps = append(exps, append(name(e[0]), 0x00, byte(firstFunc+i)))
	}
	exps = append(exps, append(name("memory"), 0x02, 0))
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = section(out, 1, types)
	out = section(out, 2, imports)
	out = section(out, 3, vec(funcs...))
	out = section(out, 5, vec([]byte{0x00, 1})) // one memory of one page
	out = section(out, 7, vec(exps...))
	return section(out, 10, vec(bodies...))
}

// outputBody is: p := alloc(len); store_u8(p+i, s[i]) for each byte;
// output_set(p, len); return 0.
func outputBody(s string) []byte {
	const (
		localGet, localSet = 0x20, 0x21
		i32Const, i64Const = 0x41, 0x42
		i64Add, call, end  = 0x7c, 0x10, 0x0b
		alloc, store, set  = 0, 1, 2
	)
	b := []byte{1, 1, 0x7e} // one local: p i64
	b = sleb(append(b, i64Const), int64(len(s)))
	b = append(b, call, alloc, localSet, 0)
	for i := range len(s) {
		b = append(b, localGet, 0)
		b = sleb(append(b, i64Const), int64(i))
		b = append(b, i64Add)
		b = sleb(append(b, i32Const), int64(s[i]))
		b = append(b, call, store)
	}
	b = append(b, localGet, 0)
	b = sleb(append(b, i64Const), int64(len(s)))
	b = append(b, call, set)
	b = sleb(append(b, i32Const), 0)
	return append(b, end)
}

func kernelImport(field string, typ byte) []byte {
	return append(append(name("extism:host/env"), name(field)...), 0x00, typ)
}

func name(s string) []byte { return append(uleb(nil, uint64(len(s))), s...) }

func vec(items ...[]byte) []byte {
	out := uleb(nil, uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func withSize(b []byte) []byte { return append(uleb(nil, uint64(len(b))), b...) }

func section(out []byte, id byte, payload []byte) []byte {
	return append(append(out, id), withSize(payload)...)
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
