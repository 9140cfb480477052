package sdk

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTypedReason: which plugins a build without encoding/json serves.
func TestTypedReason(t *testing.T) {
	type plainIn struct {
		Text  string `json:"text"`
		Count *int   `json:"count,omitempty"`
	}
	type plainOut struct {
		Items []string         `json:"items"`
		Meta  map[string]int64 `json:"meta,omitempty"`
		Raw   json.RawMessage  `json:"raw,omitempty"`
	}
	type listIn struct {
		Paths []string `json:"paths"`
	}
	type anyOut struct {
		Value any `json:"value"`
	}
	type embedded struct{ plainOut }
	spec := func(name string) ToolSpec { return ToolSpec{Name: name, Description: "d"} }
	for name, c := range map[string]struct {
		add  func(r *registry)
		want string // "" typed, else part of the reason
	}{
		"plain": {func(r *registry) {
			register(r, spec("a"), func(*Call, plainIn) (plainOut, error) { return plainOut{}, nil })
		}, ""},
		"result": {func(r *registry) {
			register(r, spec("a"), func(*Call, plainIn) (*Result, error) { return nil, nil })
		}, "tool a: it answers with a *sdk.Result"},
		"slice input": {func(r *registry) {
			register(r, spec("a"), func(*Call, listIn) (plainOut, error) { return plainOut{}, nil })
		}, "input field paths needs encoding/json"},
		"interface output": {func(r *registry) {
			register(r, spec("a"), func(*Call, plainIn) (anyOut, error) { return anyOut{}, nil })
		}, "output.value (interface {}) is an interface"},
		"embedded output": {func(r *registry) {
			register(r, spec("a"), func(*Call, plainIn) (embedded, error) { return embedded{}, nil })
		}, "has embedded fields"},
		"prompt": {func(r *registry) {
			register(r, spec("a"), func(*Call, plainIn) (plainOut, error) { return plainOut{}, nil })
			r.prompts = append(r.prompts, &prompt{spec: PromptSpec{Name: "p"}})
		}, "serves resources or prompts"},
	} {
		r := newRegistry()
		r.plugin("p", "1", "d")
		c.add(r)
		got := r.typedReason()
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: typedReason = %q, want %q", name, got, c.want)
		}
	}
}
