//lint:file-ignore SA1019 roots, sampling and logging are deprecated from MCP 2026-07-28 on; clients before it use them, and so do hyper-mcp plugins.

package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestHyperPlugins serves plugins written for hyper-mcp — its v2 interface
// (testdata/plugins/hyperv2) and its extism:host/user functions
// (testdata/plugins/hyperuser) — from the real binary to the go-sdk client:
// they load unchanged, their error results arrive whole, and what they ask
// of the client reaches it.
func TestHyperPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/hyperv2", "testdata/plugins/hyperuser")
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) { testHyperPlugins(t, version, dir) })
	}
}

// testHyperPlugins runs TestHyperPlugins at one MCP revision: from
// 2026-07-28 on, what the plugins ask the client reaches it as
// input-required results.
func testHyperPlugins(t *testing.T, version, dir string) {
	fc := newFullClient()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-hyper", Version: "1"}, fc.options(true, true))
	client.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
	cmd := exec.Command(buildtest.Binary(t), "serve", "--plugins", dir, "--data", t.TempDir())
	stderr := &clitest.SyncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	names := toolNames(t, s)
	for _, want := range []string{"v2_echo", "v2_fail", "v2_needs_key", "user_notify_tools", "user_roots", "user_ask"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list %v lacks %s", names, want)
		}
	}

	t.Run("a v2 tool answers", func(t *testing.T) {
		res := callTool(t, s, "v2_echo", map[string]any{"text": "hello"})
		if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hello" {
			t.Errorf("v2_echo: %+v", res.Content)
		}
	})

	t.Run("an error result keeps its items and carries the envelope", func(t *testing.T) {
		res := callTool(t, s, "v2_fail", map[string]any{})
		env := clitest.EnvelopeOf(t, res) // the first item
		if env.Code != abi.CodeToolError || env.Message != "first problem\nsecond problem" {
			t.Errorf("envelope %+v", env)
		}
		if len(res.Content) != 5 {
			t.Fatalf("%d items, want the envelope and the plugin's 4", len(res.Content))
		}
		t1, ok1 := res.Content[1].(*mcp.TextContent)
		t2, ok2 := res.Content[2].(*mcp.TextContent)
		img, ok3 := res.Content[3].(*mcp.ImageContent)
		link, ok4 := res.Content[4].(*mcp.ResourceLink)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			t.Fatalf("item types: %T %T %T %T", res.Content[1], res.Content[2], res.Content[3], res.Content[4])
		}
		if t1.Text != "first problem" || t2.Text != "second problem" {
			t.Errorf("texts %q %q, kept apart", t1.Text, t2.Text)
		}
		if a := t2.Annotations; a == nil || a.Priority != 0.9 || !slices.Equal(a.Audience, []mcp.Role{"user"}) {
			t.Errorf("text annotations %+v", a)
		}
		if a := img.Annotations; img.MIMEType != "image/png" || len(img.Data) == 0 || a == nil ||
			a.LastModified != "2025-01-12T15:00:58Z" || !slices.Equal(a.Audience, []mcp.Role{"assistant"}) {
			t.Errorf("image %+v, annotations %+v", img, a)
		}
		if link.URI != "hyper://logs/1" || link.Name != "log" {
			t.Errorf("resource link %+v", link)
		}
	})

	t.Run("missing configuration names the setting; the status is signed", func(t *testing.T) {
		env := clitest.EnvelopeOf(t, callTool(t, s, "v2_needs_key", map[string]any{}))
		if !strings.Contains(env.Hint, "plugins.settings.hyperv2.config.api-key") {
			t.Errorf("hint %q", env.Hint)
		}
		if status, _ := env.Details["status"].(float64); status != -1 {
			t.Errorf("details.status = %v, want -1", env.Details["status"])
		}
	})

	t.Run("resources, prompts and completion of a v2 plugin", func(t *testing.T) {
		read, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hyper://items/42"})
		if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "item 42" {
			t.Errorf("resources/read: %+v %v", read, err)
		}
		got, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "v2_greet", Arguments: map[string]string{"who": "Grace"}})
		if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "Say hello to Grace" {
			t.Errorf("prompts/get: %+v %v", got, err)
		}
		c, err := s.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "hyper://items/{id}"},
			Argument: mcp.CompleteParamsArgument{Name: "id", Value: "g"}})
		if err != nil || !slices.Equal(c.Completion.Values, []string{"resource:grace"}) {
			t.Errorf("completion/complete: %+v %v", c, err)
		}
	})

	t.Run("notify_tool_list_changed reaches the client", func(t *testing.T) {
		fc.mu.Lock()
		before := fc.changed["tools"]
		fc.mu.Unlock()
		if before != 0 {
			t.Fatalf("%d tools/list_changed before the plugin announced one", before)
		}
		res := callTool(t, s, "user_notify_tools", map[string]any{})
		if res.IsError {
			t.Fatalf("user_notify_tools: %+v", res.Content)
		}
		waitChanges(t, fc, "tools")
		if lt, err := s.ListTools(ctx, nil); err != nil || len(lt.Tools) != len(names) {
			t.Errorf("tools after the change: %d, %v", len(lt.Tools), err)
		}
	})

	t.Run("list_roots asks the client", func(t *testing.T) {
		res := callTool(t, s, "user_roots", map[string]any{})
		var roots struct {
			Roots []struct{ URI, Name string }
		}
		if res.IsError || json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &roots) != nil ||
			len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///work/project" {
			t.Errorf("user_roots: %+v", res.Content)
		}
	})

	t.Run("create_message and create_elicitation ask the client", func(t *testing.T) {
		res := callTool(t, s, "user_ask", map[string]any{"prompt": "2+2?"})
		if res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"four"`) {
			t.Errorf("user_ask: %+v", res.Content)
		}
		res = callTool(t, s, "user_confirm", map[string]any{})
		if res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"action":"accept"`) {
			t.Errorf("user_confirm: %+v", res.Content)
		}
		fc.mu.Lock()
		defer fc.mu.Unlock()
		if len(fc.sampled) != 1 || len(fc.elicited) != 1 || fc.elicited[0].Message != "Proceed?" {
			t.Errorf("the client saw %d sampling and %d elicitation requests", len(fc.sampled), len(fc.elicited))
		}
	})

	if version != legacyRevision {
		return // log levels are set per session (logging/setLevel), which 2026-07-28 has not
	}
	t.Run("log messages and progress reach the client", func(t *testing.T) {
		if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		params := &mcp.CallToolParams{Name: "user_log", Arguments: map[string]any{}}
		params.SetProgressToken("hyper-progress")
		res, err := s.CallTool(ctx, params)
		if err != nil || res.IsError {
			t.Fatalf("user_log: %v %+v", err, res)
		}
		waitUntil(t, func() bool {
			fc.mu.Lock()
			defer fc.mu.Unlock()
			return slices.ContainsFunc(fc.logs, func(l *mcp.LoggingMessageParams) bool { return l.Logger == "hyperuser" && l.Data == "careful now" }) &&
				slices.ContainsFunc(fc.progress, func(p *mcp.ProgressNotificationParams) bool {
					return p.ProgressToken == "hyper-progress" && p.Message == "half way"
				})
		})
	})
}
