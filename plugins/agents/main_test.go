//go:build !wasip1

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

func TestMailManifest(t *testing.T) {
	raw, err := sdk.Describe()
	if err != nil {
		t.Fatal(err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Capabilities, ",") != abi.CapMail+","+abi.CapBoardRead {
		t.Errorf("capabilities = %v", m.Capabilities)
	}
	want := map[string]string{"mail_send": "mcp__mail__send", "mail_list_inbox": "mcp__mail__list_inbox", "mail_read": "mcp__mail__read",
		"mail_reply": "mcp__mail__reply", "agent_get_status": "mcp__agent__get_status", "agent_get_task": "mcp__agent__get_task",
		"log_decision": "mcp__system__log_decision"}
	if len(m.Tools) != len(want) {
		t.Fatalf("%d tools", len(m.Tools))
	}
	for _, tool := range m.Tools {
		if len(tool.Aliases) != 1 || tool.Aliases[0] != want[tool.Name] {
			t.Errorf("%s: aliases %v", tool.Name, tool.Aliases)
		}
		lines := strings.Split(tool.Description, "\n")
		for i, prefix := range []string{"Use when: ", "Required: ", "Optional: ", "Next: ", "Avoid: "} {
			if len(lines) != 5 || !strings.HasPrefix(lines[i], prefix) {
				t.Errorf("%s: description line %d is not %q", tool.Name, i, prefix)
			}
		}
		var in map[string]any
		if err := json.Unmarshal(tool.InputSchema, &in); err != nil || in["additionalProperties"] != false {
			t.Errorf("%s: input schema %s", tool.Name, tool.InputSchema)
		}
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			if _, ok := in[k]; ok {
				t.Errorf("%s: root %s", tool.Name, k)
			}
		}
		if tool.OutputSchema == nil || tool.Annotations == nil {
			t.Errorf("%s: no output schema or annotations", tool.Name)
		}
	}
}

// call runs a tool natively, answering its board calls with answer.
func call(t *testing.T, tool, args string, answer func(op string, args json.RawMessage) string) abi.CallResult {
	t.Helper()
	defer sdk.SetTestHost(func(name string, req []byte) []byte {
		var r struct {
			Op   string          `json:"op"`
			Args json.RawMessage `json:"args"`
		}
		if name != abi.FuncBoard || json.Unmarshal(req, &r) != nil {
			t.Fatalf("host call %s %s", name, req)
		}
		return []byte(`{"result":` + answer(r.Op, r.Args) + `}`)
	})()
	raw, err := sdk.HandleCall([]byte(`{"params":{"name":"` + tool + `","arguments":` + args + `},"context":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	var res abi.CallResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestMailInboxReshapes(t *testing.T) {
	res := call(t, "mail_list_inbox", `{"include_read":true}`, func(op string, args json.RawMessage) string {
		if op != abi.OpMailListInbox || string(args) != `{"include_read":true}` {
			t.Errorf("board %s %s", op, args)
		}
		return `{"count":1,"unread_count":0,"mails":[{"id":"m1","from_agent_id":"s1","from_agent_type":"SUPERVISOR","to_agent_id":"w1",
			"subject":"s","body":"b","in_reply_to":null,"thread_id":"m1","read_at":"2026-01-01T00:00:00.000000Z","created_at":"2026-01-01T00:00:00.000000Z"}]}`
	})
	var out InboxOut
	if res.IsError || json.Unmarshal(res.StructuredContent, &out) != nil || out.Count != 1 || out.Mails[0].MailID != "m1" || !out.Mails[0].IsRead {
		t.Fatalf("result %s", res.StructuredContent)
	}
	res = call(t, "mail_send", `{"to_human":true,"subject":"s","body":"b"}`, func(op string, args json.RawMessage) string {
		if op != abi.OpMailSend || string(args) != `{"to_human":true,"subject":"s","body":"b"}` {
			t.Errorf("board %s %s", op, args)
		}
		return `{"mail_id":"m2","to_agent_id":"human","subject":"s","thread_id":"m2","in_reply_to":null,"timestamp":"t"}`
	})
	var sent SentOut
	if res.IsError || json.Unmarshal(res.StructuredContent, &sent) != nil || sent.ToAgentID != "human" {
		t.Fatalf("result %s", res.StructuredContent)
	}
}
