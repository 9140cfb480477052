package dispatch_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// foreignDispatcher serves plugins written for other hosts
// (testdata/plugins/hyperv2 and hyperuser) through the whole pipeline.
func foreignDispatcher(t *testing.T) (*dispatch.Dispatcher, *registry.Registry) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins")
	}
	ctx := context.Background()
	dir, _ := buildtest.Plugins(t, "testdata/plugins/hyperv2", "testdata/plugins/hyperuser")
	engine, err := runtime.New(ctx, runtime.Config{CacheDir: compiledCache, CacheKey: testCacheKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(ctx) })
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	return dispatch.New(reg, dispatch.Options{}), reg
}

func TestHyperV2Calls(t *testing.T) {
	d, reg := foreignDispatcher(t)
	ctx := context.Background()

	t.Run("tools/call through call_tool", func(t *testing.T) {
		res := d.Call(ctx, dispatch.Request{Tool: "v2_echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
		if res.IsError() || len(res.Content) != 1 || res.Content[0].Text != "hi" {
			t.Fatalf("result %+v %s", res.Content, res.Structured)
		}
		var s struct {
			Text      string `json:"text"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(res.Structured, &s); err != nil || s.Text != "hi" || !strings.HasPrefix(s.RequestID, "plugboard-") {
			t.Errorf("structured %s: %v (the plugin sees the request context's id)", res.Structured, err)
		}
	})

	t.Run("an error result keeps every item beside the envelope", func(t *testing.T) {
		res := d.Call(ctx, dispatch.Request{Tool: "v2_fail"})
		if !res.IsError() || res.Envelope.Code != abi.CodeToolError {
			t.Fatalf("result %+v", res)
		}
		if res.Envelope.Message != "first problem\nsecond problem" {
			t.Errorf("envelope message %q: the texts, one per line", res.Envelope.Message)
		}
		if len(res.Content) != 5 {
			t.Fatalf("%d content items, want the envelope and the plugin's 4: %+v", len(res.Content), res.Content)
		}
		var env abi.Envelope
		if err := json.Unmarshal([]byte(res.Content[0].Text), &env); err != nil || env.Code != abi.CodeToolError || env.Message != res.Envelope.Message {
			t.Errorf("first item is not the envelope: %q %v", res.Content[0].Text, err)
		}
		p9, p5 := 0.9, 0.5
		want := []abi.Content{
			{Type: "text", Text: "first problem"},
			{Type: "text", Text: "second problem", Annotations: &abi.ContentAnnotations{Audience: []string{"user"}, Priority: &p9}},
			{Type: "image", Data: []byte("\x89PNG\r\n\x1a\n"), MIMEType: "image/png",
				Annotations: &abi.ContentAnnotations{Audience: []string{"assistant"}, Priority: &p5, LastModified: "2025-01-12T15:00:58Z"}},
			{Type: "resource_link", URI: "hyper://logs/1", Name: "log", MIMEType: "text/plain"},
		}
		if !reflect.DeepEqual(res.Content[1:], want) {
			got, _ := json.Marshal(res.Content[1:])
			w, _ := json.Marshal(want)
			t.Errorf("plugin's items\n got %s\nwant %s", got, w)
		}
	})

	t.Run("missing configuration is blamed on the operator", func(t *testing.T) {
		const setting = "plugins.settings.hyperv2.config.api-key"
		for _, args := range []string{`{"as_result":true}`, `{}`} {
			res := d.Call(ctx, dispatch.Request{Tool: "v2_needs_key", Arguments: json.RawMessage(args)})
			if !res.IsError() || !strings.Contains(res.Envelope.Message, "No api-key configured") {
				t.Fatalf("%s: result %+v", args, res)
			}
			env := res.Envelope
			if !strings.Contains(env.Hint, setting) || strings.Contains(env.Hint, "authors") {
				t.Errorf("%s: hint %q does not tell the operator to set %s", args, env.Hint, setting)
			}
			if keys, _ := env.Details["missing_config"].([]string); !slices.Equal(keys, []string{"api-key"}) {
				t.Errorf("%s: details %v", args, env.Details)
			}
		}
		res := d.Call(ctx, dispatch.Request{Tool: "v2_needs_key"})
		// A status failure after config_get found api-key unset is the
		// operator's to fix: unavailable, the plugin's status kept.
		if res.Envelope.Code != abi.CodeUnavailable || res.Envelope.Details["status"] != int32(-1) {
			t.Errorf("status failure: %+v", res.Envelope)
		}
	})

	t.Run("resources, prompts and completion through their exports", func(t *testing.T) {
		r, _ := reg.Resource("hyper://greeting")
		read, env := d.ReadResource(ctx, r.Plugin, "hyper://greeting", dispatch.MethodOptions{})
		if env != nil || len(read.Contents) != 1 || read.Contents[0].Text != "hello from hyper v2" {
			t.Errorf("read: %+v %v", read, env)
		}
		read, env = d.ReadResource(ctx, r.Plugin, "hyper://items/7", dispatch.MethodOptions{})
		if env != nil || len(read.Contents) != 1 || read.Contents[0].Text != "item 7" {
			t.Errorf("read through the template: %+v %v", read, env)
		}
		pr, _ := reg.Prompt("v2_greet")
		got, env := d.GetPrompt(ctx, pr, map[string]string{"who": "Ada"}, dispatch.MethodOptions{})
		if env != nil || len(got.Messages) != 1 || got.Messages[0].Content.Text != "Say hello to Ada" {
			t.Errorf("prompt: %+v %v", got, env)
		}
		c, env := d.Complete(ctx, pr.Plugin, abi.CallParams{Ref: &abi.CompletionRef{Type: abi.RefPrompt, Name: "v2_greet"},
			Argument: &abi.CompletionArg{Name: "who", Value: "a"}}, dispatch.MethodOptions{})
		if env != nil || !slices.Equal(c.Completion.Values, []string{"prompt:ada", "prompt:alan"}) || c.Completion.Total != 2 {
			t.Errorf("completion: %+v %v (the reference type reaches the plugin as hyper-mcp's \"prompt\")", c, env)
		}
	})
}

// TestListChangedRelists: a plugin saying its tools changed
// (extism:host/user notify_tool_list_changed) has them listed again after
// the call: the registry's OnChange runs, which the transport turns into
// notifications/tools/list_changed.
func TestListChangedRelists(t *testing.T) {
	d, reg := foreignDispatcher(t)
	var changes atomic.Int32
	reg.OnChange(func() { changes.Add(1) })
	before, _ := reg.Tool("user_notify_tools")
	res := d.Call(context.Background(), dispatch.Request{Tool: "user_notify_tools"})
	if res.IsError() || res.Content[0].Text != "notified" {
		t.Fatalf("result %+v", res)
	}
	deadline := time.Now().Add(20 * time.Second)
	for changes.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the registry was not refreshed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	after, ok := reg.Tool("user_notify_tools")
	if !ok || after.Def == before.Def || after.Plugin != before.Plugin {
		t.Errorf("after the refresh: %+v (before %+v)", after, before)
	}
	// A call that says nothing changes nothing.
	changes.Store(0)
	if res := d.Call(context.Background(), dispatch.Request{Tool: "user_roots"}); res.IsError() || res.Content[0].Text != `{"roots":[]}` {
		t.Errorf("user_roots without a client: %+v", res)
	}
	time.Sleep(200 * time.Millisecond)
	if n := changes.Load(); n != 0 {
		t.Errorf("%d refreshes after a call that announced nothing", n)
	}
}
