package boardapi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestMailAgentsPluginEndToEnd drives the agents plugin (WebAssembly)
// through the dispatcher and this API, as serve does, with the caller
// the dispatcher puts in the context.
func TestMailAgentsPluginEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	w := newAgentWorld(t)
	ctx := context.Background()
	dir, _ := buildtest.Plugins(t, "plugins/agents")
	engine, err := runtime.New(ctx, runtime.Config{CacheDir: filepath.Join(os.TempDir(), "plugboard-test-compiled"), CacheKey: testCacheKey, Board: w.api.Handle})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(ctx) })
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: t.TempDir(), Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	log := audit.New(audit.Static(w.st), nil)
	t.Cleanup(func() { log.Close() })
	d := dispatch.New(reg, dispatch.Options{Auditor: log})

	aliases := map[string]string{"mail_send": "mcp__mail__send", "mail_list_inbox": "mcp__mail__list_inbox", "mail_read": "mcp__mail__read",
		"mail_reply": "mcp__mail__reply", "agent_get_status": "mcp__agent__get_status", "agent_get_task": "mcp__agent__get_task",
		"log_decision": "mcp__system__log_decision"}
	for name, alias := range aliases {
		tool, ok := reg.Tool(name)
		if !ok || !slices.Contains(tool.Def.Aliases, alias) || tool.Def.OutputSchema == nil {
			t.Errorf("tool %s: served %v, aliases %v", name, ok, tool.Def.Aliases)
		}
	}

	call := func(who, tool, args string, out any) *abi.Envelope {
		t.Helper()
		var c *abi.Caller
		if who != "" {
			c = &abi.Caller{ID: who, Role: "WORKER"}
		}
		res := d.Call(ctx, dispatch.Request{Tool: tool, Arguments: json.RawMessage(args), Caller: c})
		if res.IsError() {
			return res.Envelope
		}
		if out != nil {
			if err := json.Unmarshal(res.Structured, out); err != nil {
				t.Fatalf("%s: %s: %v", tool, res.Structured, err)
			}
		}
		return nil
	}
	var sent struct {
		MailID   string `json:"mail_id"`
		ThreadID string `json:"thread_id"`
	}
	if env := call("w1", "mail_send", `{"to_agent_id":"s1","subject":"Blocked","body":"need a key"}`, &sent); env != nil {
		t.Fatal(env)
	}
	wantCode(t, "both recipients", call("w1", "mail_send", `{"to_agent_id":"s1","to_human":true,"subject":"s","body":"b"}`, nil), abi.CodeAmbiguousTarget)
	wantCode(t, "no recipient", call("w1", "mail_send", `{"subject":"s","body":"b"}`, nil), abi.CodeMissingRequired)
	wantCode(t, "no caller", call("", "mail_list_inbox", `{}`, nil), abi.CodePermissionDenied)
	wantCode(t, "another's mail", call("w2", "mail_read", `{"mail_id":"`+sent.MailID+`"}`, nil), abi.CodePermissionDenied)

	var inbox struct {
		Count int `json:"count"`
		Mails []struct {
			MailID string `json:"mail_id"`
			IsRead bool   `json:"is_read"`
		} `json:"mails"`
	}
	if env := call("s1", "mail_list_inbox", `{}`, &inbox); env != nil || inbox.Count != 1 || inbox.Mails[0].MailID != sent.MailID {
		t.Fatalf("inbox = %+v, %v", inbox, env)
	}
	var read struct {
		IsRead bool   `json:"is_read"`
		Body   string `json:"body"`
	}
	if env := call("s1", "mail_read", `{"mail_id":"`+sent.MailID+`"}`, &read); env != nil || !read.IsRead || read.Body != "need a key" {
		t.Fatalf("read = %+v, %v", read, env)
	}
	var reply struct {
		Subject   string `json:"subject"`
		ToAgentID string `json:"to_agent_id"`
		ThreadID  string `json:"thread_id"`
	}
	if env := call("s1", "mail_reply", `{"mail_id":"`+sent.MailID+`","body":"here"}`, &reply); env != nil ||
		reply.Subject != "Re: Blocked" || reply.ToAgentID != "w1" || reply.ThreadID != sent.MailID {
		t.Fatalf("reply = %+v, %v", reply, env)
	}
	var status struct {
		AgentID         string  `json:"agent_id"`
		SupervisorID    *string `json:"supervisor_id"`
		UnreadMailCount int     `json:"unread_mail_count"`
	}
	if env := call("w1", "agent_get_status", `{}`, &status); env != nil || status.AgentID != "w1" || *status.SupervisorID != "s1" ||
		status.UnreadMailCount != 1 {
		t.Fatalf("status = %+v, %v", status, env)
	}
	var task struct {
		Task struct {
			TaskID string `json:"task_id"`
		} `json:"task"`
	}
	if env := call("w1", "agent_get_task", `{}`, &task); env != nil || task.Task.TaskID != w.taskID {
		t.Fatalf("task = %+v, %v", task, env)
	}
	var entry struct {
		LogID string `json:"log_id"`
	}
	if env := call("w1", "log_decision", `{"title":"Asked for a key","body":"cannot proceed without it"}`, &entry); env != nil {
		t.Fatal(env)
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows, _ := w.st.ListDecisions(ctx, store.DecisionFilter{Limit: 100})
	kinds := map[string]int{}
	for _, r := range rows {
		kinds[r.Kind+"/"+r.Status]++
	}
	// 11 calls (7 ok, 4 refused; the call without a caller is recorded
	// too) and the deliberate entry.
	if kinds["decision/ok"] != 1 || kinds["call/ok"] != 7 || kinds["call/error"] != 4 {
		t.Fatalf("decision log: %v", kinds)
	}
	if d, _ := w.st.GetDecision(ctx, entry.LogID); !strings.Contains(d.Body, "cannot proceed") {
		t.Fatalf("deliberate entry = %+v", d)
	}
}
