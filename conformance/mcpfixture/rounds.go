package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// The tools and the prompt of the suite's 2026-07-28 input-required
// scenarios (SEP-2322). Each asks with Call.Ask under the key the scenario
// expects; at 2026-07-28 the host turns the questions into an
// input-required result and runs the handler again with the answers, at
// 2025-11-25 it asks the client with server-to-client requests. Any error
// of Ask (input_required among them) is returned as it is.

// schema is a flat elicitation schema of one required field. It must come
// out the same in every run: the host matches a replayed question to its
// answer by content.
func schema(name, typ string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "object",
		"properties": map[string]any{name: map[string]string{"type": typ}}, "required": []string{name}})
	return b
}

var (
	nameSchema    = schema("name", "string")
	colorSchema   = schema("color", "string")
	confirmSchema = schema("ok", "boolean")
)

var capitalQuestion = abi.SampleRequest{
	Messages:  []abi.SamplingMessage{{Role: "user", Content: sdk.Text("What is the capital of France?")}},
	MaxTokens: 100,
}

// field is a string field of an accepted elicitation, or what became of it.
func field(res *abi.ElicitResult, name string) string {
	if res.Action != "accept" {
		return "(" + res.Action + ")"
	}
	return fmt.Sprint(res.Content[name])
}

func rootURIs(res *abi.RootsResult) string {
	uris := make([]string, len(res.Roots))
	for i, r := range res.Roots {
		uris[i] = r.URI
	}
	return strings.Join(uris, ", ")
}

// confirm is request_state and tampered_state: the host opened and checked
// the sealed requestState before it ran the handler with the answer, so an
// answer reaching the handler is a validated state.
func confirm(c *sdk.Call, _ none) (*sdk.Result, error) {
	a, err := c.Ask(sdk.AskElicit("confirm", "Please confirm", confirmSchema))
	if err != nil {
		return nil, err
	}
	el, err := a.Elicit("confirm")
	if err != nil {
		return nil, err
	}
	return text(fmt.Sprintf("state-ok: confirmed (action=%s, ok=%s)", el.Action, field(el, "ok")))
}

func inputRequired() {
	tool("test_input_required_result_elicitation", "Asks the user's name, greets them.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		a, err := c.Ask(sdk.AskElicit("user_name", "What is your name?", nameSchema))
		if err != nil {
			return nil, err
		}
		el, err := a.Elicit("user_name")
		if err != nil {
			return nil, err
		}
		return text("Hello, " + field(el, "name") + "!")
	})
	tool("test_input_required_result_sampling", "Asks the client's model the capital of France.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		a, err := c.Ask(sdk.AskSample("capital_question", capitalQuestion))
		if err != nil {
			return nil, err
		}
		s, err := a.Sample("capital_question")
		if err != nil {
			return nil, err
		}
		return text("LLM response: " + s.Content.Text)
	})
	tool("test_input_required_result_list_roots", "Asks the client for its roots.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		a, err := c.Ask(sdk.AskRoots("client_roots"))
		if err != nil {
			return nil, err
		}
		r, err := a.Roots("client_roots")
		if err != nil {
			return nil, err
		}
		return text("Client roots: " + rootURIs(r))
	})
	tool("test_input_required_result_request_state", "Asks for a confirmation; the answer comes back with the request state.", confirm)
	tool("test_input_required_result_tampered_state", "Asks for a confirmation; a tampered request state is refused.", confirm)
	tool("test_input_required_result_multiple_inputs", "Asks the user, the client's model and the client's roots at once.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		a, err := c.Ask(
			sdk.AskElicit("user_name", "What is your name?", nameSchema),
			sdk.AskSample("capital_question", capitalQuestion),
			sdk.AskRoots("client_roots"))
		if err != nil {
			return nil, err
		}
		el, err := a.Elicit("user_name")
		if err != nil {
			return nil, err
		}
		s, err := a.Sample("capital_question")
		if err != nil {
			return nil, err
		}
		r, err := a.Roots("client_roots")
		if err != nil {
			return nil, err
		}
		return text(fmt.Sprintf("name=%s; model=%s; roots=%s", field(el, "name"), s.Content.Text, rootURIs(r)))
	})
	tool("test_input_required_result_multi_round", "Asks the user's name, then their favourite colour.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		a, err := c.Ask(sdk.AskElicit("step1", "Step 1: What is your name?", nameSchema))
		if err != nil {
			return nil, err
		}
		name, err := a.Elicit("step1")
		if err != nil {
			return nil, err
		}
		// A second Ask is a second round: the first answer travels in the
		// request state, the client answers only step2.
		a, err = c.Ask(sdk.AskElicit("step2", "Step 2: What is your favorite color?", colorSchema))
		if err != nil {
			return nil, err
		}
		color, err := a.Elicit("step2")
		if err != nil {
			return nil, err
		}
		return text(fmt.Sprintf("name=%s, color=%s", field(name, "name"), field(color, "color")))
	})
	tool("test_input_required_result_capabilities", "Asks the client's model and the user; reports which the client could answer.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		a, err := c.Ask(
			sdk.AskSample("capital_question", capitalQuestion),
			sdk.AskElicit("user_name", "What is your name?", nameSchema))
		if err != nil {
			return nil, err
		}
		// The host asks a client only what it declared; the rest come back
		// as per-answer errors (unsupported), which are part of the result.
		var parts []string
		if s, err := a.Sample("capital_question"); err != nil {
			parts = append(parts, "sampling: "+err.Error())
		} else {
			parts = append(parts, "sampling: "+s.Content.Text)
		}
		if el, err := a.Elicit("user_name"); err != nil {
			parts = append(parts, "elicitation: "+err.Error())
		} else {
			parts = append(parts, "elicitation: "+field(el, "name"))
		}
		return text(strings.Join(parts, "; "))
	})
	// Calls sampling whatever the client declared: at 2026-07-28 the host
	// answers a client without sampling with MissingRequiredClientCapability
	// (-32021), which needs the plugin's error as it is.
	tool("test_missing_capability", "Asks the client's model; fails when the client cannot sample.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		s, err := c.Sample(capitalQuestion)
		if err != nil {
			return nil, err
		}
		return text("LLM response: " + s.Content.Text)
	})
	sdk.Prompt(sdk.PromptSpec{Name: "test_input_required_result_prompt", Title: "Prompt Asking For Context",
		Description: "A prompt that asks the user for its context"},
		func(c *sdk.Call, _ map[string]string) (*abi.GetPromptResult, error) {
			a, err := c.Ask(sdk.AskElicit("user_context", "What context should the prompt use?", schema("context", "string")))
			if err != nil {
				return nil, err
			}
			el, err := a.Elicit("user_context")
			if err != nil {
				return nil, err
			}
			return &abi.GetPromptResult{Messages: []abi.PromptMessage{
				userText("Answer with this context in mind: " + field(el, "context")),
			}}, nil
		})
}
