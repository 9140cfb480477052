package e2e

//lint:file-ignore SA1019 mail notices are MCP log notifications; logging is deprecated only from MCP 2026-07-28 on, and this server speaks up to 2025-11-25.

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestMailBetweenAgents runs the agents plugin through `plugboard serve
// --http` with two agents: a worker mails its supervisor, who is connected
// and hears of it as a log notification, reads it (the worker may not),
// and replies; the decision log shows the calls.
func TestMailBetweenAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/agents")
	data := t.TempDir()
	s := startHTTPServer(t, dir, httpEnv(), "--agents", agentsFile(t), "--data", data)

	// The boss connects with a log handler and asks for info-level logs.
	var (
		mu      sync.Mutex
		notices []*mcp.LoggingMessageParams
	)
	client := mcp.NewClient(&mcp.Implementation{Name: "boss", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			notices = append(notices, req.Params)
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Mail notices are log notifications on a session: MCP 2025-11-25.
	boss, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: bearer{bossToken}}},
		&mcp.ClientSessionOptions{ProtocolVersion: legacyRevision})
	if err != nil {
		t.Fatal(err)
	}
	defer boss.Close()
	if err := boss.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	worker, _, err := connectHTTP(t, s.URL, workerToken)
	if err != nil {
		t.Fatal(err)
	}
	call := func(sess *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		return callSession(t, ctx, sess, tool, args)
	}

	var sent struct {
		MailID string `json:"mail_id"`
	}
	structured(t, call(worker, "mail_send", map[string]any{"to_agent_id": "boss", "subject": "Blocked", "body": "Need the API key"}), &sent)
	// Exactly one recipient: both is ambiguous.
	if env := clitest.EnvelopeOf(t, call(worker, "mail_send", map[string]any{"to_agent_id": "boss", "to_human": true, "subject": "x", "body": "y"})); env.Code != abi.CodeAmbiguousTarget {
		t.Fatalf("two recipients: %+v", env)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(notices)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the connected recipient got no notification of the mail")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	if notices[0].Logger != "mail" || !strings.Contains(string(mustJSON(t, notices[0].Data)), sent.MailID) {
		t.Errorf("notification = %+v", notices[0])
	}
	mu.Unlock()

	var inbox struct {
		Count       int `json:"count"`
		UnreadCount int `json:"unread_count"`
	}
	structured(t, call(boss, "mail_list_inbox", map[string]any{}), &inbox)
	if inbox.UnreadCount != 1 {
		t.Fatalf("boss inbox = %+v", inbox)
	}
	// Only the recipient may read a mail.
	if env := clitest.EnvelopeOf(t, call(worker, "mail_read", map[string]any{"mail_id": sent.MailID})); env.Code != abi.CodePermissionDenied && env.Code != abi.CodeNotFound {
		t.Fatalf("the sender read the recipient's mail: %+v", env)
	}
	var read struct {
		Subject string `json:"subject"`
	}
	structured(t, call(boss, "mail_read", map[string]any{"mail_id": sent.MailID}), &read)
	if read.Subject != "Blocked" {
		t.Fatalf("read = %+v", read)
	}
	structured(t, call(boss, "mail_reply", map[string]any{"mail_id": sent.MailID, "body": "Here it is"}), &struct{}{})
	var workerInbox struct {
		Mails []struct {
			Subject     string `json:"subject"`
			FromAgentID string `json:"from_agent_id"`
		} `json:"mails"`
	}
	structured(t, call(worker, "mail_list_inbox", map[string]any{}), &workerInbox)
	if len(workerInbox.Mails) != 1 || workerInbox.Mails[0].Subject != "Re: Blocked" || workerInbox.Mails[0].FromAgentID != "boss" {
		t.Fatalf("worker inbox = %+v", workerInbox)
	}

	// The decision log has the calls, by agent.
	time.Sleep(100 * time.Millisecond) // the log writes in the background
	out, err := exec.Command(buildtest.Binary(t), "audit", "tail", "--data", data, "--agent", "worker1", "--tool", "mail_send").CombinedOutput()
	if err != nil {
		t.Fatalf("audit tail: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "worker1(WORKER) mail_send "); got != 2 || !strings.Contains(string(out), "ambiguous_target") {
		all, _ := exec.Command(buildtest.Binary(t), "audit", "tail", "--data", data).CombinedOutput()
		t.Fatalf("audit tail for worker1/mail_send:\n%s\nwhole log:\n%s", out, all)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
