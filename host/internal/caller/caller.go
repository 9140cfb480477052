// Package caller carries the identity behind a call through a context, from
// the transport that authenticated it (stdio --agent, an HTTP bearer token,
// the REST body) to everything downstream that acts for it: the dispatcher's
// permission check and audit, and host functions such as the board and mail
// operations. It owns only that hand-over; who may do what is host/internal/policy's.
package caller

import (
	"context"

	"github.com/plugboard/plugboard/abi"
)

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c *abi.Caller) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// From returns the caller ctx carries, or nil.
func From(ctx context.Context) *abi.Caller {
	c, _ := ctx.Value(key{}).(*abi.Caller)
	return c
}
