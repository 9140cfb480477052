// Package clitest holds the helpers of tests that run plugboard processes
// and read what they answer: `plugboard serve --http` run until it prints
// its URL, the first-party plugin list, a tool result's text and error
// envelope, a buffer a child process writes while the test reads it, and a
// section of a Markdown document. cmd/plugboard's own tests and its
// end-to-end tests (cmd/plugboard/e2e) share them; the buffer serves the
// other packages whose tests run processes too. It is test support only;
// nothing in the product imports it.
package clitest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
)

// SyncBuffer is a bytes.Buffer safe for one writer and concurrent readers:
// a child process's stdout or stderr written by exec's copying goroutine
// while the test polls String.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Text joins the text content items of a tool result.
func Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "")
}

// EnvelopeOf returns the error envelope of a tool result that must be an
// error, failing the test when it is not one the ABI defines: the envelope
// is the first text item, with a registered code and a message, and an
// error result carries no structuredContent.
func EnvelopeOf(t testing.TB, res *mcp.CallToolResult) abi.Envelope {
	t.Helper()
	if !res.IsError {
		t.Fatalf("expected an envelope error, got success %s", Text(res))
	}
	if res.StructuredContent != nil {
		// A tool's outputSchema describes successes; clients that check
		// structuredContent against it on isError too would lose the envelope.
		t.Errorf("isError result with structuredContent %v: the envelope belongs in the text content only", res.StructuredContent)
	}
	// The envelope is the first item; a plugin's own items, kept on its
	// error results, follow it.
	var env abi.Envelope
	var b []byte
	if len(res.Content) == 0 {
		t.Fatal("isError result without content")
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		b = []byte(tc.Text)
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Code == "" {
		t.Fatalf("isError result whose text is not an envelope: %s", b)
	}
	if _, ok := abi.Lookup(env.Code); !ok {
		t.Errorf("envelope code %q is not registered", env.Code)
	}
	if env.Message == "" {
		t.Errorf("envelope %s has no message", env.Code)
	}
	return env
}

// MarkdownSection returns the text under heading (a whole line such as
// "## Commands"), up to the next second-level heading; false when doc has
// no such heading.
func MarkdownSection(doc, heading string) (string, bool) {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return "", false
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest, true
}
