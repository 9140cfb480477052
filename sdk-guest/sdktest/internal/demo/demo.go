// Package demo is the plugin sdktest's own tests run, natively and through
// plugboard (testdata/demo is its main package): one tool for each thing
// an operator gives a plugin — a configuration value, HTTP, a directory.
package demo

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// GreetIn is the input of greet.
type GreetIn struct {
	Name string `json:"name" jsonschema:"who to greet; 1-100 characters"`
}

// GreetOut is the output of greet.
type GreetOut struct {
	Greeting string `json:"greeting" jsonschema:"the greeting, from the configured greeting (default Hello)"`
}

// Greet answers greet: the configuration value "greeting", else Hello.
func Greet(_ *sdk.Call, in GreetIn) (GreetOut, error) {
	if in.Name == "" || len(in.Name) > 100 {
		return GreetOut{}, sdk.InvalidArgument("name", "name must be 1-100 characters", "Call greet again with a name.")
	}
	greeting, ok := sdk.Config("greeting")
	if !ok {
		greeting = "Hello"
	}
	return GreetOut{Greeting: greeting + ", " + in.Name + "!"}, nil
}

// FetchIn is the input of fetch.
type FetchIn struct {
	Path string `json:"path" jsonschema:"the path to GET under the configured base_url, starting with /"`
}

// FetchOut is the output of fetch.
type FetchOut struct {
	Status int    `json:"status" jsonschema:"the HTTP status code"`
	Body   string `json:"body" jsonschema:"the response body"`
}

// Fetch answers fetch: GET base_url + path.
func Fetch(_ *sdk.Call, in FetchIn) (FetchOut, error) {
	base, ok := sdk.Config("base_url")
	if !ok {
		return FetchOut{}, sdk.Fail(abi.CodeUnavailable, "no base_url is configured", "Ask the operator to set base_url.")
	}
	resp, err := sdk.HTTP(sdk.HTTPRequest{URL: base + in.Path})
	if err != nil {
		return FetchOut{}, err
	}
	return FetchOut{Status: resp.Status, Body: string(resp.Body)}, nil
}

// NoteIn is the input of read_note.
type NoteIn struct {
	Name string `json:"name" jsonschema:"the note's file name in /notes"`
}

// NoteOut is the output of read_note.
type NoteOut struct {
	Text string `json:"text" jsonschema:"the note's text"`
}

// ReadNote answers read_note: a file of the directory mounted at /notes.
func ReadNote(_ *sdk.Call, in NoteIn) (NoteOut, error) {
	root, err := sdk.OpenDir("/notes")
	if err != nil {
		return NoteOut{}, err
	}
	defer root.Close()
	b, err := fs.ReadFile(root.FS(), in.Name)
	if errors.Is(err, fs.ErrNotExist) {
		return NoteOut{}, sdk.NotFound("no note named "+in.Name, "Call read_note with the name of an existing note.")
	}
	if err != nil {
		return NoteOut{}, err
	}
	return NoteOut{Text: strings.TrimSpace(string(b))}, nil
}

func init() {
	sdk.Plugin("sdktest-demo", "1.0.0", "The plugin sdktest's tests run.")
	sdk.Tool(sdk.ToolSpec{Name: "greet", Description: `Use when: you need a greeting for someone.
Required: name
Optional: none
Next: use greeting in your answer.
Avoid: an empty name.`}, Greet)
	sdk.Tool(sdk.ToolSpec{Name: "fetch", Description: `Use when: you need a page of the configured site.
Required: path
Optional: none
Next: read body.
Avoid: full URLs in path.`}, Fetch)
	sdk.Tool(sdk.ToolSpec{Name: "read_note", Description: `Use when: you need a note's text.
Required: name
Optional: none
Next: use text.
Avoid: paths outside the notes.`}, ReadNote)
}
