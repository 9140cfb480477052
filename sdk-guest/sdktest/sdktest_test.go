package sdktest_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/sdk-guest/sdktest"
	"github.com/plugboard/plugboard/sdk-guest/sdktest/internal/demo"
)

// The tools of package demo, called natively: with no settings, then with a
// configuration value, an HTTP server and a directory.
func TestCallNative(t *testing.T) {
	var out demo.GreetOut
	if err := sdktest.Call(t, sdktest.Env{}, "greet", demo.GreetIn{Name: "Ada"}, &out); err != nil || out.Greeting != "Hello, Ada!" {
		t.Errorf("greet = %+v, %v", out, err)
	}
	env := sdktest.Env{Config: map[string]string{"greeting": "Welcome"}}
	if err := sdktest.Call(t, env, "greet", demo.GreetIn{Name: "Ada"}, &out); err != nil || out.Greeting != "Welcome, Ada!" {
		t.Errorf("greet with a greeting configured = %+v, %v", out, err)
	}

	// An envelope comes back as an *abi.Envelope: the handler's, or the
	// SDK's for arguments the input type refuses.
	for _, in := range []any{
		demo.GreetIn{},
		demo.GreetIn{Name: string(make([]byte, 101))},
		map[string]any{"nam": "Ada"},
		map[string]any{"name": 1},
	} {
		var env *abi.Envelope
		if err := sdktest.Call(t, sdktest.Env{}, "greet", in, nil); !errors.As(err, &env) || env.Code != abi.CodeInvalidArgument {
			t.Errorf("greet %v = %v, want invalid_argument", in, err)
		}
	}
	var env2 *abi.Envelope
	if err := sdktest.Call(t, sdktest.Env{}, "no_such_tool", nil, nil); !errors.As(err, &env2) || env2.Code != abi.CodeToolNotFound {
		t.Errorf("no_such_tool = %v", err)
	}
}

func TestCallNativeHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "page %s", r.URL.Path)
	}))
	defer srv.Close()
	var out demo.FetchOut
	env := sdktest.Env{Config: map[string]string{"base_url": srv.URL}, Server: srv}
	if err := sdktest.Call(t, env, "fetch", demo.FetchIn{Path: "/a"}, &out); err != nil || out != (demo.FetchOut{Status: 200, Body: "page /a"}) {
		t.Errorf("fetch = %+v, %v", out, err)
	}
	// Without the server, the request is refused as the host refuses it.
	var denied *abi.Envelope
	env.Server = nil
	if err := sdktest.Call(t, env, "fetch", demo.FetchIn{Path: "/a"}, &out); !errors.As(err, &denied) || denied.Code != abi.CodePermissionDenied {
		t.Errorf("fetch without a server = %v, want permission_denied", err)
	}
}

func TestCallNativeDirs(t *testing.T) {
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "todo.txt"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := sdktest.Env{Dirs: map[string]string{"/notes": notes}}
	var out demo.NoteOut
	if err := sdktest.Call(t, env, "read_note", demo.NoteIn{Name: "todo.txt"}, &out); err != nil || out.Text != "buy milk" {
		t.Errorf("read_note = %+v, %v", out, err)
	}
	var missing *abi.Envelope
	if err := sdktest.Call(t, env, "read_note", demo.NoteIn{Name: "none.txt"}, &out); !errors.As(err, &missing) || missing.Code != abi.CodeNotFound {
		t.Errorf("read_note of a missing note = %v, want not_found", err)
	}
}

// Use, for a test that calls a handler function itself.
func TestUse(t *testing.T) {
	sdktest.Use(t, sdktest.Env{Config: map[string]string{"greeting": "Hi"}})
	out, err := demo.Greet(nil, demo.GreetIn{Name: "Ada"})
	if err != nil || out.Greeting != "Hi, Ada!" {
		t.Errorf("Greet = %+v, %v", out, err)
	}
}

// The same tools through the real runtime: built with plugboard plugin
// build, called with plugboard call.
func TestRuntime(t *testing.T) {
	p := sdktest.Build(t, "testdata/demo")
	if p.Name != "sdktest-demo" {
		t.Errorf("Name = %q", p.Name)
	}
	var out demo.GreetOut
	if err := p.Call(t, sdktest.Env{}, "greet", demo.GreetIn{Name: "Ada"}, &out); err != nil || out.Greeting != "Hello, Ada!" {
		t.Errorf("greet = %+v, %v", out, err)
	}
	var env *abi.Envelope
	if err := p.Call(t, sdktest.Env{}, "greet", map[string]any{"nam": "Ada"}, nil); !errors.As(err, &env) || env.Code == "" {
		t.Errorf("greet with an unknown argument = %v, want an envelope", err)
	}
	// Without settings the sandbox has no HTTP and no directories.
	if err := p.Call(t, sdktest.Env{}, "read_note", demo.NoteIn{Name: "todo.txt"}, nil); !errors.As(err, &env) {
		t.Errorf("read_note with nothing mounted = %v, want an envelope", err)
	}

	// With them: a configuration value, the test's HTTP server, a directory.
	if err := p.Call(t, sdktest.Env{Config: map[string]string{"greeting": "Welcome"}}, "greet", demo.GreetIn{Name: "Ada"}, &out); err != nil ||
		out.Greeting != "Welcome, Ada!" {
		t.Errorf("greet with a greeting configured = %+v, %v", out, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "page %s", r.URL.Path)
	}))
	defer srv.Close()
	var page demo.FetchOut
	withServer := sdktest.Env{Config: map[string]string{"base_url": srv.URL}, Server: srv}
	if err := p.Call(t, withServer, "fetch", demo.FetchIn{Path: "/a"}, &page); err != nil || page != (demo.FetchOut{Status: 200, Body: "page /a"}) {
		t.Errorf("fetch = %+v, %v", page, err)
	}
	withServer.Server = nil
	if err := p.Call(t, withServer, "fetch", demo.FetchIn{Path: "/a"}, nil); !errors.As(err, &env) || env.Code != abi.CodePermissionDenied {
		t.Errorf("fetch without the server allowed = %v, want permission_denied", err)
	}
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "todo.txt"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var note demo.NoteOut
	if err := p.Call(t, sdktest.Env{Dirs: map[string]string{"/notes": notes}}, "read_note", demo.NoteIn{Name: "todo.txt"}, &note); err != nil ||
		note.Text != "buy milk" {
		t.Errorf("read_note = %+v, %v", note, err)
	}
}
