package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/plugboard/plugboard/abi"
)

// MaxQuestions caps the questions of one ask.
const MaxQuestions = 16

// Asker is implemented by a Client that asks several questions at once
// (abi.FuncAsk): together on a session, or as one input-required result
// at MCP 2026-07-28. Each answer may carry its own envelope; the envelope
// returned is for the whole ask (input_required among them).
type Asker interface {
	Ask(ctx context.Context, questions map[string]abi.Question) (map[string]abi.Answer, *abi.Envelope)
}

var questionKey = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// checkQuestions refuses an ask the plugin got wrong: no or too many
// questions, a bad key or method, params a question of its kind cannot
// have, or a kind whose capability the plugin was not granted.
func checkQuestions(qs map[string]abi.Question, grants map[string]bool) *abi.Envelope {
	if len(qs) == 0 || len(qs) > MaxQuestions {
		return abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("ask needs 1 to %d questions, got %d", MaxQuestions, len(qs)), "")
	}
	for key, q := range qs {
		if !questionKey.MatchString(key) {
			return abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("ask: question key %q is not 1-64 of A-Z a-z 0-9 _ . -", key), "")
		}
		need := ""
		switch q.Method {
		case abi.MethodSample:
			var s abi.SampleRequest
			if err := json.Unmarshal(q.Params, &s); err != nil || len(s.Messages) == 0 || s.MaxTokens <= 0 {
				return abi.NewEnvelope(abi.CodeInvalidArgument, "ask: sampling question "+key+" needs at least one message and a positive maxTokens", "")
			}
			need = abi.CapSampling
		case abi.MethodElicit:
			var el abi.ElicitRequest
			if err := json.Unmarshal(q.Params, &el); err != nil || el.Message == "" || len(el.RequestedSchema) == 0 {
				return abi.NewEnvelope(abi.CodeInvalidArgument, "ask: elicitation question "+key+" needs a message and a requestedSchema", "")
			}
			need = abi.CapElicitation
		case abi.MethodRoots:
		default:
			return abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("ask: question %s has method %q; use %s, %s or %s", key, q.Method,
				abi.MethodSample, abi.MethodElicit, abi.MethodRoots), "")
		}
		if need != "" && !grants[need] {
			return abi.NewEnvelope(abi.CodePermissionDenied,
				fmt.Sprintf("ask: question %s needs capability %q, which this plugin was not granted", key, need),
				"declare the capability in the plugin manifest and ask the operator to grant it")
		}
	}
	return nil
}

// ask puts the questions to c: all at once when it is an Asker, else one
// after the other. Without a client every answer is unsupported.
func ask(ctx context.Context, c Client, qs map[string]abi.Question) (map[string]abi.Answer, *abi.Envelope) {
	if a, ok := c.(Asker); ok {
		return a.Ask(ctx, qs)
	}
	out := make(map[string]abi.Answer, len(qs))
	for key, q := range qs {
		out[key] = AskOne(ctx, c, q)
	}
	return out, nil
}

// AskOne puts one question to c through its Sample, Elicit or ListRoots.
func AskOne(ctx context.Context, c Client, q abi.Question) abi.Answer {
	var (
		res json.RawMessage
		env *abi.Envelope
	)
	switch {
	case c == nil:
		env = noClient(q.Method)
	case q.Method == abi.MethodSample:
		res, env = c.Sample(ctx, q.Params)
	case q.Method == abi.MethodElicit:
		res, env = c.Elicit(ctx, q.Params)
	default:
		rl, ok := c.(RootsLister)
		if !ok {
			env = noClient("roots")
			break
		}
		res, env = rl.ListRoots(ctx)
	}
	return abi.Answer{Result: res, Error: env}
}
