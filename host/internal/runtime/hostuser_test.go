package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// fakeClient is the MCP client of a call, recording what reaches it.
type fakeClient struct {
	mu      sync.Mutex
	notes   []abi.NotifyRequest
	sampled []string
	elicit  []string
	roots   json.RawMessage // nil: no roots capability
	updated []string
}

func (c *fakeClient) Notify(_ context.Context, n abi.NotifyRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, n)
}

func (c *fakeClient) Sample(_ context.Context, req json.RawMessage) (json.RawMessage, *abi.Envelope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sampled = append(c.sampled, string(req))
	return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"four"},"model":"m"}`), nil
}

func (c *fakeClient) Elicit(_ context.Context, req json.RawMessage) (json.RawMessage, *abi.Envelope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elicit = append(c.elicit, string(req))
	return json.RawMessage(`{"action":"accept","content":{"ok":true}}`), nil
}

func (c *fakeClient) ListRoots(context.Context) (json.RawMessage, *abi.Envelope) {
	if c.roots == nil {
		return nil, abi.NewEnvelope(abi.CodeUnsupported, "no roots", "")
	}
	return c.roots, nil
}

func (c *fakeClient) ResourceUpdated(_ context.Context, uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updated = append(c.updated, uri)
}

// text is the one text item of a CallToolResult.
func text(t *testing.T, out []byte) string {
	t.Helper()
	var res abi.CallResult
	if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("result %s: %v", out, err)
	}
	return res.Content[0].Text
}

// TestHostUser calls the functions hyper-mcp gives its plugins in
// extism:host/user from testdata/plugins/hyperuser: each reaches the call's
// client, a list change reaches the hook of WithListChanged, and what needs
// a grant or a client says so.
func TestHostUser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/hyperuser")
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	b, err := os.ReadFile(wasm["hyperuser"])
	if err != nil {
		t.Fatal(err)
	}
	granted, err := e.Compile(ctx, "hyperuser", b, []string{abi.CapSampling, abi.CapElicitation})
	if err != nil {
		t.Fatal(err)
	}
	ungranted := compile(t, e, wasm["hyperuser"])
	if imports := granted.UserImports(); len(imports) != 7 {
		t.Errorf("UserImports = %v, want the seven functions hyperuser imports", imports)
	}

	t.Run("notify_tool_list_changed reaches the hook", func(t *testing.T) {
		var kinds []string
		cctx := runtime.WithListChanged(ctx, func(kind string) { kinds = append(kinds, kind) })
		out, err := granted.Call(cctx, abi.ExportCall, request("user_notify_tools", `{}`), runtime.CallOptions{})
		if err != nil || text(t, out) != "notified" {
			t.Fatalf("%s %v", out, err)
		}
		if !slices.Equal(kinds, []string{runtime.ListTools}) {
			t.Errorf("list changes %v, want [tools]", kinds)
		}
		// Without a hook the call still succeeds.
		if _, err := granted.Call(ctx, abi.ExportCall, request("user_notify_tools", `{}`), runtime.CallOptions{}); err != nil {
			t.Error(err)
		}
	})

	t.Run("list_roots", func(t *testing.T) {
		c := &fakeClient{roots: json.RawMessage(`{"roots":[{"uri":"file:///work","name":"work"}]}`)}
		out, err := granted.Call(ctx, abi.ExportCall, request("user_roots", `{}`), runtime.CallOptions{Client: c})
		if err != nil || text(t, out) != `{"roots":[{"uri":"file:///work","name":"work"}]}` {
			t.Errorf("with roots: %s %v", out, err)
		}
		for name, c := range map[string]runtime.Client{"no roots capability": &fakeClient{}, "no client": nil} {
			out, err := granted.Call(ctx, abi.ExportCall, request("user_roots", `{}`), runtime.CallOptions{Client: c})
			if err != nil || text(t, out) != `{"roots":[]}` {
				t.Errorf("%s: %s %v", name, out, err)
			}
		}
	})

	t.Run("log and progress", func(t *testing.T) {
		c := &fakeClient{}
		var progress []abi.ProgressRequest
		out, err := granted.Call(ctx, abi.ExportCall, request("user_log", `{}`), runtime.CallOptions{Client: c,
			Progress: func(p abi.ProgressRequest) { progress = append(progress, p) }})
		if err != nil || text(t, out) != "logged" {
			t.Fatalf("%s %v", out, err)
		}
		if len(c.notes) != 1 || c.notes[0].Level != "warning" || c.notes[0].Logger != "hyperuser" || string(c.notes[0].Data) != `"careful now"` {
			t.Errorf("log notifications %+v", c.notes)
		}
		if len(progress) != 1 || progress[0] != (abi.ProgressRequest{Progress: 1, Total: 2, Message: "half way"}) {
			t.Errorf("progress %+v", progress)
		}
		if !slices.Equal(c.updated, []string{"file:///work/project/notes.txt"}) {
			t.Errorf("resource updates %v", c.updated)
		}
	})

	t.Run("sampling and elicitation", func(t *testing.T) {
		c := &fakeClient{}
		out, err := granted.Call(ctx, abi.ExportCall, request("user_ask", `{"prompt":"2+2?"}`), runtime.CallOptions{Client: c})
		if err != nil || !strings.Contains(text(t, out), `"text":"four"`) || len(c.sampled) != 1 || !strings.Contains(c.sampled[0], "2+2?") {
			t.Errorf("create_message: %s %v %v", out, err, c.sampled)
		}
		out, err = granted.Call(ctx, abi.ExportCall, request("user_confirm", `{}`), runtime.CallOptions{Client: c})
		if err != nil || text(t, out) != `{"action":"accept","content":{"ok":true}}` || len(c.elicit) != 1 ||
			strings.Contains(c.elicit[0], "timeout") || !strings.Contains(c.elicit[0], "Proceed?") {
			t.Errorf("create_elicitation: %s %v %v", out, err, c.elicit)
		}
		// No client to ask: elicitation is declined, sampling fails the call.
		out, err = granted.Call(ctx, abi.ExportCall, request("user_confirm", `{}`), runtime.CallOptions{})
		if err != nil || text(t, out) != `{"action":"decline"}` {
			t.Errorf("create_elicitation without a client: %s %v", out, err)
		}
		_, err = granted.Call(ctx, abi.ExportCall, request("user_ask", `{"prompt":"x"}`), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodeUnsupported {
			t.Errorf("create_message without a client: %+v", env)
		}
		// Not granted: permission_denied naming the capability.
		_, err = ungranted.Call(ctx, abi.ExportCall, request("user_ask", `{"prompt":"x"}`), runtime.CallOptions{Client: c})
		if env := envelope(t, err); env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, abi.CapSampling) {
			t.Errorf("create_message not granted: %+v", env)
		}
		_, err = ungranted.Call(ctx, abi.ExportCall, request("user_confirm", `{}`), runtime.CallOptions{Client: c})
		if env := envelope(t, err); env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, abi.CapElicitation) {
			t.Errorf("create_elicitation not granted: %+v", env)
		}
	})
}

// TestStatusAndConfigBlame: a non-zero Extism status reads as the signed
// int32 the guest returned, and a failure naming configuration the plugin
// asked for and did not find speaks to the operator.
func TestStatusAndConfigBlame(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/hyperv2")
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	b, err := os.ReadFile(wasm["hyperv2"])
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Compile(ctx, "hyperv2", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := []byte(`{"request":{"name":"v2_needs_key","arguments":{}},"context":{"id":"1","_meta":{}}}`)
	rctx, missing := runtime.RecordMissingConfig(ctx)
	_, err = p.Call(rctx, "call_tool", in, runtime.CallOptions{})
	env := envelope(t, err)
	if env.Code != abi.CodePluginFailed || !strings.Contains(env.Message, "No api-key configured") {
		t.Fatalf("envelope %+v", env)
	}
	if env.Details["status"] != int32(-1) || strings.Contains(env.Message, "4294967295") {
		t.Errorf("status %v (%T), want int32 -1", env.Details["status"], env.Details["status"])
	}
	if j, _ := json.Marshal(env); !strings.Contains(string(j), `"status":-1`) {
		t.Errorf("status in JSON: %s", j)
	}
	const setting = "plugins.settings.hyperv2.config.api-key"
	if !strings.Contains(env.Hint, setting) || strings.Contains(env.Hint, "authors") {
		t.Errorf("hint %q does not name %s for the operator", env.Hint, setting)
	}
	if keys, _ := env.Details["missing_config"].([]string); !slices.Equal(keys, []string{"api-key"}) {
		t.Errorf("details.missing_config = %v", env.Details["missing_config"])
	}
	if got := missing(); !slices.Equal(got, []string{"api-key"}) {
		t.Errorf("RecordMissingConfig saw %v", got)
	}

	// With the key set, the same call succeeds.
	out, err := p.Call(ctx, "call_tool", in, runtime.CallOptions{Config: map[string]string{"api-key": "k"}})
	if err != nil || !strings.Contains(string(out), "configured") {
		t.Errorf("with the key: %s %v", out, err)
	}
	// Any other failing status keeps the generic hint.
	_, err = p.Call(ctx, "call_tool", []byte(`{"request":{"name":"nope"},"context":{"id":2,"_meta":{}}}`), runtime.CallOptions{})
	if env := envelope(t, err); env.Details["status"] != int32(-1) || strings.Contains(env.Hint, "plugins.settings") {
		t.Errorf("unknown tool: %+v", env)
	}
}

func TestConfigBlame(t *testing.T) {
	cases := []struct {
		message  string
		missing  []string
		wantKeys []string
		blamed   bool
	}{
		{"No api-key configured", nil, []string{"api-key"}, true},
		{"No api-key configured", []string{"api-key"}, []string{"api-key"}, true},
		{"request failed: 401 unauthorized", []string{"API_KEY"}, nil, false},
		{"SERPER_API_KEY is not set", nil, []string{"SERPER_API_KEY"}, true},
		{"missing config", []string{"token", "region"}, []string{"token", "region"}, true},
		{"missing config", nil, nil, true},
		{"configuration key endpoint is missing", nil, []string{"endpoint"}, true},
		{"the token is required", []string{"token", "timeout"}, []string{"token"}, true},
		{"Error: 'time' argument is required", nil, nil, false},
		{"Error: 'time' argument is required", []string{"timezone"}, nil, false},
		{"Invalid timezone 'Mars/Base'", []string{"default_tz"}, nil, false},
		{"Invalid timezone 'Mars/Base'", []string{"timezone"}, nil, false},
	}
	for _, c := range cases {
		keys, hint := runtime.ConfigBlame("p", c.message, c.missing)
		if (hint != "") != c.blamed || !slices.Equal(keys, c.wantKeys) {
			t.Errorf("ConfigBlame(%q, %v) = %v, %q; want keys %v, blamed %v", c.message, c.missing, keys, hint, c.wantKeys, c.blamed)
		}
		for _, k := range keys {
			if !strings.Contains(hint, "plugins.settings.p.config."+k) {
				t.Errorf("hint %q does not name key %s", hint, k)
			}
		}
		if c.blamed && !strings.Contains(hint, "plugins.settings.p") {
			t.Errorf("hint %q does not name the plugin's settings", hint)
		}
	}
}
