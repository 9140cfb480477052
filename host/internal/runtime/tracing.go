package runtime

import (
	"context"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// traceHost runs fn, one host function the guest called (module, name),
// under its span (host/internal/tracing), fn's context carrying it; fn
// returns the code of the envelope it answered ("" for none). A function
// that ends the call (k.fail, a cap, an interruption: a panic wazero
// turns into the call's error) ends its span failed, with the envelope
// the kernel kept, and the panic goes on. Callers check
// tracing.Recording first, so an untraced call pays for neither the span
// nor the closure.
func traceHost(ctx context.Context, k *kernel, module, name string, fn func(context.Context) string) {
	ctx, span := tracing.StartHost(ctx, module, name)
	done := false
	defer func() {
		if done {
			return
		}
		code := abi.CodePluginFailed
		if k != nil && k.limit != nil {
			code = k.limit.Code
		}
		tracing.End(span, code)
	}()
	code := fn(ctx)
	done = true
	tracing.End(span, code)
}

// envCode is the code of env, "" for nil.
func envCode(env *abi.Envelope) string {
	if env == nil {
		return ""
	}
	return env.Code
}
