// Command nonce is a test plugin for request_id idempotency: its one tool
// declares the key field request_id and answers a fresh random nonce on
// every run. Plugins keep no state across instances, so the nonce is how a
// test tells a replay (the same nonce) from a second run (a new one).
package main

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of nonce.
type Input struct {
	Label     string `json:"label,omitempty" jsonschema:"any text, echoed back; part of the payload"`
	SleepMS   int    `json:"sleep_ms,omitempty" jsonschema:"how long to run before answering, in milliseconds"`
	Fail      bool   `json:"fail,omitempty" jsonschema:"answer an envelope error (details.nonce still set)"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key: a retry with the same key and arguments returns the first answer"`
}

// Output is the answer of nonce.
type Output struct {
	Nonce string `json:"nonce" jsonschema:"128 random bits, hex; new on every run"`
	Label string `json:"label" jsonschema:"the label argument"`
	// RequestID is the key the host passed in the call context.
	RequestID string `json:"request_id" jsonschema:"the request_id the host passed in the call context"`
}

func init() {
	sdk.Plugin("nonce", "1.0.0", "Test plugin: a keyed tool answering a random nonce.")
	sdk.Tool(sdk.ToolSpec{
		Name: "nonce",
		Description: `Use when: testing request_id deduplication.
Required: none
Optional: label, sleep_ms, fail, request_id
Next: compare nonce across calls: equal means replayed, different means run again.
Avoid: expecting a nonce to mean anything.`,
		Idempotency: &abi.Idempotency{KeyField: "request_id"},
	}, func(c *sdk.Call, in Input) (Output, error) {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Output{}, err
		}
		nonce := hex.EncodeToString(b[:])
		time.Sleep(time.Duration(in.SleepMS) * time.Millisecond)
		if in.Fail {
			return Output{}, sdk.Fail(abi.CodeConflict, "failing as asked", "call again without fail").WithDetail("nonce", nonce)
		}
		return Output{Nonce: nonce, Label: in.Label, RequestID: c.Context().RequestID}, nil
	})
}

func main() {}
