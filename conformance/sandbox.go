package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
)

// The sandbox check is structural plus a probe, not a test of the plugin's
// tools: a generic kit cannot know what a tool does, so it cannot make a
// tool try to escape. What it can establish is that nothing is reachable:
//
//   - a plugin reaches the world only through its imports, and abi.imports
//     proves each one is a function the host really provides (WASI preview
//     1, Extism's kernel, plugboard:host/v1 with its capability checks);
//   - WASI functions reach files, sockets and the environment only through
//     what the instance is configured with: preopened directories, open
//     descriptors, environment variables, arguments;
//   - the probe below, compiled and instantiated by the same engine as the
//     plugin — so with the very instance configuration the plugin's
//     instances get — asks WASI for each of those and finds none.
//
// testdata/plugins/snoop is the other half: a plugin whose tool does try
// os.ReadFile, os.Getenv, net.Dial and raw WASI calls, run through the
// host by this package's tests to show every attempt fails inside the guest.

// probeExports are the probe module's exports, each () -> i32 returning 0
// when contained.
var probeExports = []struct {
	name, what string
	explain    func(status uint32) string
}{
	{"probe_preopens", "no preopened directory (fd_prestat_get on descriptors 3-63; 0-2 are the captured stdio)",
		func(s uint32) string { return fmt.Sprintf("descriptor %d is a preopened directory", s-1) }},
	{"probe_descriptors", "no open descriptor beyond stdio (fd_fdstat_get on descriptors 3-63)",
		func(s uint32) string { return fmt.Sprintf("descriptor %d is open", s) }},
	{"probe_environ", "an empty environment (environ_sizes_get)",
		func(s uint32) string {
			if s >= 1000 {
				return fmt.Sprintf("environ_sizes_get failed with errno %d", s-1000)
			}
			return fmt.Sprintf("the environment is not empty (%d entries and bytes)", s)
		}},
	{"probe_args", "an empty argument list (args_sizes_get)",
		func(s uint32) string {
			if s >= 1000 {
				return fmt.Sprintf("args_sizes_get failed with errno %d", s-1000)
			}
			return fmt.Sprintf("the argument list is not empty (%d entries and bytes)", s)
		}},
	{"probe_path_open", "path_open failing on every descriptor 0-63 (\".\", \"etc/passwd\", \"/etc/passwd\")",
		func(s uint32) string { return fmt.Sprintf("path_open succeeded relative to descriptor %d", s-1) }},
	{"probe_sockets", "sock_accept failing on every descriptor 0-63",
		func(s uint32) string { return fmt.Sprintf("sock_accept succeeded on descriptor %d", s-1) }},
}

// probeResult is the outcome of one probe export.
type probeResult struct {
	what    string
	problem string // "" when contained
}

// runSandboxProbe compiles the probe in the engine and runs each export.
func runSandboxProbe(ctx context.Context, eng *plugin.Engine) ([]probeResult, error) {
	p, err := eng.Compile(ctx, "conformance-sandbox-probe", sandboxProbe(), nil)
	if err != nil {
		return nil, fmt.Errorf("compiling the sandbox probe: %w", err)
	}
	defer p.Close(ctx)
	var out []probeResult
	for _, pe := range probeExports {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := p.Call(cctx, pe.name, nil, plugin.CallOptions{})
		cancel()
		r := probeResult{what: pe.what}
		var env *abi.Envelope
		switch {
		case err == nil:
		case errors.As(err, &env) && env.Details["status"] != nil:
			status, _ := env.Details["status"].(uint32)
			r.problem = pe.explain(status)
		default:
			r.problem = "the probe failed: " + err.Error()
		}
		out = append(out, r)
	}
	return out, nil
}

// wasm opcodes the probe uses.
const (
	opBlockEmpty = 0x40
	opLoop       = 0x03
	opIf         = 0x04
	opEnd        = 0x0b
	opBrIf       = 0x0d
	opReturn     = 0x0f
	opCall       = 0x10
	opLocalGet   = 0x20
	opLocalSet   = 0x21
	opLocalTee   = 0x22
	opI32Load    = 0x28
	opI32Const   = 0x41
	opI64Const   = 0x42
	opI32Eqz     = 0x45
	opI32Ne      = 0x47
	opI32LtU     = 0x49
	opI32Add     = 0x6a
)

type asm []byte

func (a asm) i32(v int32) asm      { return asm(sleb(append(a, opI32Const), int64(v))) }
func (a asm) i64(v int64) asm      { return asm(sleb(append(a, opI64Const), v)) }
func (a asm) call(f uint32) asm    { return asm(uleb(append(a, opCall), uint64(f))) }
func (a asm) get(l uint32) asm     { return asm(uleb(append(a, opLocalGet), uint64(l))) }
func (a asm) set(l uint32) asm     { return asm(uleb(append(a, opLocalSet), uint64(l))) }
func (a asm) tee(l uint32) asm     { return asm(uleb(append(a, opLocalTee), uint64(l))) }
func (a asm) op(codes ...byte) asm { return append(a, codes...) }
func (a asm) load(addr int32) asm  { return a.i32(addr).op(opI32Load, 2, 0) }

// returnIf: if the top of the stack is non-zero, return local 0 plus add.
func (a asm) returnIf(add int32) asm {
	return a.op(opIf, opBlockEmpty).get(0).i32(add).op(opI32Add, opReturn, opEnd)
}

// loopFDs runs body for local 0 = from .. 63.
func loopFDs(from int32, body func(asm) asm) asm {
	a := asm(nil).i32(from).set(0).op(opLoop, opBlockEmpty)
	a = body(a)
	a = a.get(0).i32(1).op(opI32Add).tee(0).i32(64).op(opI32LtU, opBrIf, 0, opEnd)
	return a.i32(0)
}

// Imported WASI functions, in import order.
const (
	fnPrestatGet = iota
	fnFdstatGet
	fnEnvironSizes
	fnArgsSizes
	fnPathOpen
	fnSockAccept
	numImports
)

// Probe memory layout: results at 1024.., paths at 2048...
const (
	memResult  = 1024
	memDot     = 2048
	memRelPath = 2052
	memAbsPath = 2064
	errnoEBADF = 8
	// WASI oflags and rights.
	oflagDirectory = 0x2
	rightRead      = 0x2    // fd_read
	rightReaddir   = 0x4000 // fd_readdir
	relPath        = "etc/passwd"
	absPath        = "/etc/passwd"
	probeMemory    = ".\x00\x00\x00" + relPath + "\x00\x00" + absPath
)

// sandboxProbe assembles the probe module.
func sandboxProbe() []byte {
	i32, i64 := byte(valI32), byte(valI64)
	types := []funcType{
		{[]byte{i32, i32}, []byte{i32}},                                    // fd_prestat_get, fd_fdstat_get, *_sizes_get
		{[]byte{i32, i32, i32, i32, i32, i64, i64, i32, i32}, []byte{i32}}, // path_open
		{[]byte{i32, i32, i32}, []byte{i32}},                               // sock_accept
		{nil, []byte{i32}},                                                 // the probes
	}
	imports := []struct {
		name string
		typ  uint32
	}{{"fd_prestat_get", 0}, {"fd_fdstat_get", 0}, {"environ_sizes_get", 0}, {"args_sizes_get", 0}, {"path_open", 1}, {"sock_accept", 2}}

	// path_open(dirfd, dirflags 0, path, len, oflags, rights, inheriting 0,
	// fdflags 0, &fd): read-only, so only a missing preopen can make it fail
	// (asking for write rights on a directory would fail anyway).
	pathOpen := func(a asm, ptr, n int32, oflags int32, rights int64) asm {
		return a.get(0).i32(0).i32(ptr).i32(n).i32(oflags).i64(rights).i64(0).i32(0).i32(memResult).call(fnPathOpen).op(opI32Eqz).returnIf(1)
	}
	sizes := func(fn uint32) asm {
		a := asm(nil).i32(memResult).i32(memResult + 4).call(fn).tee(0).returnIf(1000)
		return a.load(memResult).load(memResult + 4).op(opI32Add)
	}
	bodies := []asm{
		// From 3: WASI preopens follow stdio, and wazero answers
		// fd_prestat_get on 0-2 with success and an empty name.
		loopFDs(3, func(a asm) asm { return a.get(0).i32(memResult).call(fnPrestatGet).op(opI32Eqz).returnIf(1) }),
		loopFDs(3, func(a asm) asm {
			return a.get(0).i32(memResult).call(fnFdstatGet).i32(errnoEBADF).op(opI32Ne).returnIf(0)
		}),
		sizes(fnEnvironSizes),
		sizes(fnArgsSizes),
		loopFDs(0, func(a asm) asm {
			a = pathOpen(a, memDot, 1, oflagDirectory, rightReaddir)
			a = pathOpen(a, memRelPath, int32(len(relPath)), 0, rightRead)
			return pathOpen(a, memAbsPath, int32(len(absPath)), 0, rightRead)
		}),
		loopFDs(0, func(a asm) asm {
			return a.get(0).i32(0).i32(memResult).call(fnSockAccept).op(opI32Eqz).returnIf(1)
		}),
	}

	out := []byte("\x00asm\x01\x00\x00\x00")
	p := uleb(nil, uint64(len(types)))
	for _, t := range types {
		p = encodeType(p, t)
	}
	out = section(out, 1, p)
	p = uleb(nil, uint64(len(imports)))
	for _, imp := range imports {
		p = wname(p, abi.WASIModule)
		p = wname(p, imp.name)
		p = append(p, kindFunc)
		p = uleb(p, uint64(imp.typ))
	}
	out = section(out, 2, p)
	p = uleb(nil, uint64(len(bodies)))
	for range bodies {
		p = uleb(p, 3)
	}
	out = section(out, 3, p)
	out = section(out, 5, []byte{1, 0x00, 1}) // one memory, min 1 page
	p = uleb(nil, uint64(len(probeExports)+1))
	p = append(wname(p, "memory"), kindMemory, 0)
	for i, pe := range probeExports {
		p = append(wname(p, pe.name), kindFunc)
		p = uleb(p, uint64(numImports+i))
	}
	out = section(out, 7, p)
	p = uleb(nil, uint64(len(bodies)))
	for _, b := range bodies {
		fn := []byte{1, 1, valI32} // one local group: 1 x i32
		fn = append(fn, b...)
		fn = append(fn, opEnd)
		p = append(uleb(p, uint64(len(fn))), fn...)
	}
	out = section(out, 10, p)
	p = uleb(nil, 1)
	p = append(p, 0x00, opI32Const)
	p = sleb(p, memDot)
	p = append(p, opEnd)
	p = append(uleb(p, uint64(len(probeMemory))), probeMemory...)
	return section(out, 11, p)
}
