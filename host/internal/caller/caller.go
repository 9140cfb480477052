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

type mayKey struct{}

// WithMay returns ctx carrying may, which tells whether the caller in ctx
// may call a tool by name (the dispatcher's policy over the tools served),
// so that a hint written anywhere downstream suggests only tools the
// caller can act on.
func WithMay(ctx context.Context, may func(tool string) bool) context.Context {
	return context.WithValue(ctx, mayKey{}, may)
}

// May reports whether the caller in ctx may call tool: what the function
// WithMay set says, else true (no dispatcher policy is in force, so every
// served tool is callable).
func May(ctx context.Context, tool string) bool {
	if may, ok := ctx.Value(mayKey{}).(func(string) bool); ok && may != nil {
		return may(tool)
	}
	return true
}
