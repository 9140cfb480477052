//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/extism/go-pdk"

	"github.com/plugboard/plugboard/abi"
)

// This file is the only one that touches the WebAssembly boundary: the two
// exports of the ABI and the imports of the plugboard host functions. Each
// import is referenced only from the Call method that needs it, so a plugin
// that never reports progress or logs does not import it and still loads in
// a plain Extism host.

//go:wasmexport describe
func exportDescribe() int32 {
	out, err := std.describe()
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.Output(out)
	return 0
}

//go:wasmexport call
func exportCall() int32 {
	out, err := std.call(pdk.Input())
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.Output(out)
	return 0
}

//go:wasmimport plugboard:host/v1 progress
func importProgress(req uint64) uint64

//go:wasmimport plugboard:host/v1 log
func importLog(req uint64) uint64

//go:wasmimport plugboard:host/v1 board
func importBoard(req uint64) uint64

//go:wasmimport plugboard:host/v1 notify
func importNotify(req uint64) uint64

//go:wasmimport plugboard:host/v1 sample
func importSample(req uint64) uint64

//go:wasmimport plugboard:host/v1 elicit
func importElicit(req uint64) uint64

//go:wasmimport plugboard:host/v1 ask
func importAsk(req uint64) uint64

func hostNotify(req []byte) []byte { return callHost(importNotify, req) }

func hostSample(req []byte) []byte { return callHost(importSample, req) }

func hostElicit(req []byte) []byte { return callHost(importElicit, req) }

func hostAsk(req []byte) []byte { return callHost(importAsk, req) }

func hostProgress(req []byte) []byte { return callHost(importProgress, req) }

func hostBoard(req []byte) []byte { return callHost(importBoard, req) }

func hostLog(req []byte) []byte { return callHost(importLog, req) }

// callHost passes req to a host function in an Extism memory block and
// returns the response block's bytes (nil when the host answers 0), freeing
// both blocks.
func callHost(fn func(uint64) uint64, req []byte) []byte {
	mem := pdk.AllocateBytes(req)
	off := fn(mem.Offset())
	mem.Free()
	if off == 0 {
		return nil
	}
	resp := pdk.FindMemory(off)
	b := resp.ReadBytes()
	resp.Free()
	return b
}

// The direct-call fast path (abi.ExportBuffer, abi.ExportCallDirect): the
// host writes the request straight into buffer and reads the answer straight
// out of guest memory, with no host calls at all, instead of moving both
// through the Extism kernel 8 bytes per host call. Plain Extism hosts ignore
// these exports and use call.
var (
	directIn  []byte
	directOut []byte
)

//go:wasmexport plugboard_buffer
func exportBuffer(size uint32) uint32 {
	if uint32(cap(directIn)) < size {
		directIn = make([]byte, size)
	}
	directIn = directIn[:size]
	if size == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&directIn[0])))
}

//go:wasmexport plugboard_call
func exportCallDirect(size uint32) uint64 {
	out, err := std.call(directIn[:size])
	if err != nil {
		out = encodeError(abi.NewEnvelope(abi.CodePluginFailed, err.Error(), "report it to the plugin's authors"), false)
	}
	directOut = out
	if len(out) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&directOut[0])))<<32 | uint64(len(out))
}
