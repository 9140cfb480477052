package sdk

import (
	"encoding/json"

	"github.com/plugboard/plugboard/abi"
)

// Question is one question of Call.Ask; make it with AskSample, AskElicit
// or AskRoots.
type Question struct {
	key string
	q   abi.Question
	err error
}

// AskSample is a question for the client's model (sampling/createMessage)
// under key. The plugin must Require(abi.CapSampling).
func AskSample(key string, req abi.SampleRequest) Question {
	b, err := json.Marshal(req)
	return Question{key: key, q: abi.Question{Method: abi.MethodSample, Params: b}, err: err}
}

// AskElicit is a question for the client's user (elicitation/create, form
// mode) under key: message says what is asked, schema is a flat JSON
// Schema object. The plugin must Require(abi.CapElicitation).
func AskElicit(key, message string, schema any) Question {
	raw, err := json.Marshal(schema)
	if err != nil {
		return Question{key: key, err: err}
	}
	b, err := json.Marshal(abi.ElicitRequest{Message: message, RequestedSchema: raw})
	return Question{key: key, q: abi.Question{Method: abi.MethodElicit, Params: b}, err: err}
}

// AskRoots asks the client for its roots (roots/list) under key.
func AskRoots(key string) Question {
	return Question{key: key, q: abi.Question{Method: abi.MethodRoots}}
}

// Answers are the client's answers to Call.Ask, by key.
type Answers map[string]abi.Answer

// Sample decodes the answer to the sampling question key.
func (a Answers) Sample(key string) (*abi.SampleResult, error) {
	var out abi.SampleResult
	if err := a.decode(key, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Elicit decodes the answer to the elicitation question key. A declined or
// cancelled question is a result, not an error.
func (a Answers) Elicit(key string) (*abi.ElicitResult, error) {
	var out abi.ElicitResult
	if err := a.decode(key, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Roots decodes the answer to the roots question key.
func (a Answers) Roots(key string) (*abi.RootsResult, error) {
	var out abi.RootsResult
	if err := a.decode(key, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (a Answers) decode(key string, out any) error {
	ans, ok := a[key]
	switch {
	case !ok:
		return abi.NewEnvelope(abi.CodeInternal, "ask: the host gave no answer for "+key, "retry the call")
	case ans.Error != nil:
		return ans.Error
	}
	if err := json.Unmarshal(ans.Result, out); err != nil {
		return abi.NewEnvelope(abi.CodeInternal, "ask: the answer for "+key+" is unreadable: "+err.Error(), "retry the call")
	}
	return nil
}

// Ask asks the client several questions at once and waits for every
// answer. Each answer may be an error of its own (unsupported when the
// client lacks that capability); the call's error is for the whole ask —
// among them input_required, which a client at MCP 2026-07-28 gets as one
// input-required result holding every question under its key, after which
// the call runs again from the start and Ask returns the answers: return
// that error as it is, and ask before making changes that are not board
// operations (see abi.FuncAsk).
func (c *Call) Ask(questions ...Question) (Answers, error) {
	req := abi.AskRequest{Questions: make(map[string]abi.Question, len(questions))}
	for _, q := range questions {
		if q.err != nil {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "ask: question "+q.key+" is not JSON: "+q.err.Error(), "")
		}
		req.Questions[q.key] = q.q
	}
	var out abi.AskResult
	if err := hostRequest(hostAsk, "ask", req, &out); err != nil {
		return nil, err
	}
	return Answers(out.Answers), nil
}
