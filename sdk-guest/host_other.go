//go:build !wasip1

package sdk

// nativeHost stands in for the plugboard host functions outside WebAssembly,
// where there is no host: tests set it to observe progress and log calls.
// It receives the function name and the JSON request and returns the JSON
// response (nil for none).
var nativeHost func(name string, req []byte) []byte

func hostProgress(req []byte) []byte { return callNativeHost("progress", req) }

func hostLog(req []byte) []byte { return callNativeHost("log", req) }

func hostBoard(req []byte) []byte { return callNativeHost("board", req) }

func hostNotify(req []byte) []byte { return callNativeHost("notify", req) }

func hostSample(req []byte) []byte { return callNativeHost("sample", req) }

func hostElicit(req []byte) []byte { return callNativeHost("elicit", req) }

func hostAsk(req []byte) []byte { return callNativeHost("ask", req) }

func callNativeHost(name string, req []byte) []byte {
	if nativeHost == nil {
		return nil
	}
	return nativeHost(name, req)
}
