package mcpserver

//lint:file-ignore SA1019 logging is deprecated only from MCP 2026-07-28 on; this server speaks up to 2025-11-25 (see ProtocolVersions).

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/mail"
)

func TestMailNotifierReachesTheRecipientsSession(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}},
	})
	n := NewMailNotifier(srv, Options{Caller: &abi.Caller{ID: "w1", Role: "WORKER"}})

	got := make(chan *mcp.LoggingMessageParams, 4)
	connect := func() *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { got <- r.Params },
		})
		cs, err := c.Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		// The first request binds the session to its caller (w1).
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	connect()

	n.MailArrived(ctx, "someone-else", mail.Notice{MailID: "m0", From: "x", Subject: "not yours"})
	n.MailArrived(ctx, "w1", mail.Notice{MailID: "m1", From: "s1", Subject: "Task", ThreadID: "m1"})
	select {
	case p := <-got:
		b, _ := json.Marshal(p.Data)
		if p.Level != "info" || p.Logger != "mail" || string(b) != `{"from":"s1","mail_id":"m1","subject":"Task","thread_id":"m1"}` {
			t.Fatalf("notice = %+v %s", p, b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notice")
	}
	select {
	case p := <-got:
		t.Fatalf("second notice %+v", p)
	case <-time.After(100 * time.Millisecond):
	}

	// A closed session is forgotten as it ends, before any mail: sessions
	// kept until the next mail held the memory of every closed one.
	for range 20 {
		connect().Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n.mu.Lock()
		sessions := len(n.sessions)
		n.mu.Unlock()
		if sessions == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions tracked after 20 of 21 closed, with no mail since", sessions)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cs := connect()
	cs.Close()
	time.Sleep(50 * time.Millisecond)
	n.MailArrived(ctx, "w1", mail.Notice{MailID: "m2", From: "s1", Subject: "again"})
	n.mu.Lock()
	sessions := len(n.sessions)
	n.mu.Unlock()
	if sessions != 1 {
		t.Fatalf("%d sessions tracked after one closed", sessions)
	}
}
