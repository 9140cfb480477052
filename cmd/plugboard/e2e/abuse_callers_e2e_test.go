package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// nested returns a JSON value nesting depth arrays ([[…[]…]]) or objects
// ({"a":{"a":…{}…}}).
func nested(depth int, objects bool) string {
	open, end := "[", "]"
	if objects {
		open, end = `{"a":`, "}"
	}
	var b strings.Builder
	b.Grow(depth * (len(open) + len(end)))
	for range depth {
		b.WriteString(open)
	}
	if objects {
		b.WriteString("{}")
	} else {
		b.WriteString("[]")
	}
	for range depth {
		b.WriteString(end)
	}
	return b.String()
}

// rawStdio is `plugboard serve` spoken to over stdio line by line, without
// a client library: the attacks send what no SDK would encode.
type rawStdio struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	stderr *clitest.SyncBuffer
	exited chan struct{}
}

func startRawStdio(t *testing.T, args ...string) *rawStdio {
	t.Helper()
	cmd := exec.Command(buildtest.Binary(t), append([]string{"serve"}, args...)...)
	s := &rawStdio{cmd: cmd, lines: make(chan []byte, 16), stderr: &clitest.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	var err error
	if s.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				s.lines <- line
			}
			if err != nil {
				close(s.lines)
				return
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = s.in.Close()
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", shorten(s.stderr.String(), 4000))
		}
	})
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"abuse","version":"1"}}}`)
	if _, ok := s.reply(t, 1); !ok {
		t.Fatalf("no answer to initialize; stderr:\n%s", s.stderr.String())
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawStdio) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(s.in, msg+"\n"); err != nil {
		t.Logf("writing to serve: %v", err)
	}
}

// reply waits for the answer to request id; false when the server closed
// its output first (it ended, or dropped the connection).
func (s *rawStdio) reply(t *testing.T, id int) (rpcReply, bool) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return rpcReply{}, false
			}
			var r rpcReply
			if json.Unmarshal(line, &r) == nil && r.ID == id {
				return r, true
			}
		case <-timeout:
			t.Fatalf("no answer to request %d in 2 minutes", id)
		}
	}
}

// rpcReply is a JSON-RPC answer to a tools/call.
type rpcReply struct {
	ID     int `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// envelope returns the envelope of an isError result, or nil.
func (r rpcReply) envelope() *abi.Envelope {
	if r.Result == nil || !r.Result.IsError || len(r.Result.Content) == 0 {
		return nil
	}
	var env abi.Envelope
	if json.Unmarshal([]byte(r.Result.Content[0].Text), &env) != nil {
		return nil
	}
	return &env
}

func (r rpcReply) String() string {
	b, _ := json.Marshal(r)
	return shorten(string(b), 600)
}

// toolsCall is a tools/call request whose arguments are args, raw.
func toolsCall(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// httpRPC posts one JSON-RPC message on session sid and returns the
// answer with id (from a JSON or an event-stream body) and the status.
func httpRPC(t *testing.T, url, token, sid, msg string, id int) (rpcReply, int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data:"))
		var r rpcReply
		if json.Unmarshal(bytes.TrimSpace(line), &r) == nil && r.ID == id && (r.Result != nil || r.Error != nil) {
			return r, resp.StatusCode
		}
	}
	t.Logf("HTTP %d without an answer to %d: %s", resp.StatusCode, id, shorten(string(body), 300))
	return rpcReply{}, resp.StatusCode
}

// TestAbuseCallersDeeplyNestedArguments sends tools/call arguments nested
// 100,000 levels deep (arrays, then objects) and 900 levels deep (under the
// go-sdk's own cap of 1000 for a whole message, so they reach the host's
// pipeline) over stdio, over streamable HTTP and through the REST door
// (whose decoder allows 10,000 levels). The host must stay up and
// answering, refuse what reaches its pipeline with invalid_argument naming
// the depth limit, before any recursive walk of the arguments (validation,
// the request_id hash, the plugin), and keep its memory bounded. Before,
// 900 levels reached the plugin, whose guest overflowed its stack after 1
// to 4 s of CPU (plugin_failed, blaming the plugin's authors) and grew the
// server by about 110 MB; in a string-typed field they were echoed whole in
// the validation message. 100,000 levels never reach the host's code: the
// go-sdk answers 400 over HTTP and, over stdio, ends the session (serve
// exits 1 with the reason), as the REST door answers 400.
func TestAbuseCallersDeeplyNestedArguments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/boardprobe", "testdata/plugins/nonce")
	// The depth limit must be named in the hint, so an agent knows what
	// to change.
	refusedForDepth := func(env *abi.Envelope) bool {
		if env == nil || env.Code != abi.CodeInvalidArgument {
			return false
		}
		limit, ok := env.Details["max_depth"].(float64)
		return ok && limit >= 32 && limit < 900 && strings.Contains(env.Hint, fmt.Sprint(limit))
	}
	type attack struct {
		name, tool, args string
		// pipeline: the attack reaches the host's pipeline, which must
		// answer it with the depth envelope; otherwise the transport
		// refuses it first and the host must only survive it.
		pipeline bool
	}
	var attacks []attack
	for _, objects := range []bool{false, true} {
		kind := "arrays"
		if objects {
			kind = "objects"
		}
		attacks = append(attacks,
			attack{"100k " + kind + " in board_call", "board_call", `{"op":"list_projects","args":{"x":` + nested(100_000, objects) + `}}`, false},
			attack{"900 " + kind + " in board_call", "board_call", `{"op":"list_projects","args":{"x":` + nested(900, objects) + `}}`, true},
			attack{"900 " + kind + " in a keyed call", "nonce", `{"request_id":"deep","label":` + nested(900, objects) + `}`, true},
		)
	}

	t.Run("stdio", func(t *testing.T) {
		// exitedCleanly: the process did not crash. A message the
		// transport cannot read (the go-sdk's stdio reader stops at
		// encoding/json's 10,000 levels) ends the session, and serve with
		// it, with the reason logged: an orderly exit, never a fatal error.
		exitedCleanly := func(t *testing.T, s *rawStdio, name string, dropped bool) {
			t.Helper()
			_ = s.in.Close()
			<-s.exited
			code, stderr := s.cmd.ProcessState.ExitCode(), s.stderr.String()
			if strings.Contains(stderr, "fatal error") || strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") ||
				code != 0 && (!dropped || !strings.Contains(stderr, "exceeded max depth")) {
				t.Errorf("%s: serve exited %d:\n%s", name, code, shorten(stderr, 2000))
			}
		}
		data := t.TempDir()
		// The attacks that reach the pipeline, on one connection: each is
		// answered, and the connection keeps serving.
		s := startRawStdio(t, "--plugins", dir, "--data", data)
		id := 10
		for _, a := range attacks {
			if !a.pipeline {
				continue
			}
			id++
			s.send(t, toolsCall(id, a.tool, a.args))
			r, answered := s.reply(t, id)
			t.Logf("%s: answered %v: %v", a.name, answered, r)
			if !refusedForDepth(r.envelope()) {
				t.Errorf("%s: %v, want invalid_argument naming the depth limit", a.name, r)
			}
			id++
			s.send(t, toolsCall(id, "nonce", `{"label":"after"}`))
			if r, ok := s.reply(t, id); !ok || r.Result == nil || r.Result.IsError {
				t.Fatalf("%s: the next call got %v (answered %v)", a.name, r, ok)
			}
		}
		exitedCleanly(t, s, "after the attacks", false)
		// The ones the transport refuses, each on a server of its own: it
		// may drop the connection, which must not crash the host.
		for _, a := range attacks {
			if a.pipeline {
				continue
			}
			s := startRawStdio(t, "--plugins", dir, "--data", data)
			s.send(t, toolsCall(1000, a.tool, a.args))
			r, answered := s.reply(t, 1000)
			t.Logf("%s: answered %v: %v", a.name, answered, r)
			exitedCleanly(t, s, a.name, !answered)
		}
	})

	t.Run("HTTP and REST", func(t *testing.T) {
		agents := writeAgents(t, `{"agents": [{"id": "boss", "type": "SUPERVISOR", "token": "`+secBossToken+`"}]}`)
		s := startHTTPServer(t, dir, httpEnv(), "--agents", agents)
		sid, err := initialize(http.DefaultClient, s.URL, secBossToken)
		if err != nil {
			t.Fatal(err)
		}
		httpRPC(t, s.URL, secBossToken, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0)
		// Both plugins compiled and instantiated first: the memory measured
		// below is the attacks'.
		for i, c := range []string{toolsCall(1, "nonce", `{"label":"warm-up"}`), toolsCall(2, "board_call", `{"op":"list_projects"}`)} {
			if r, _ := httpRPC(t, s.URL, secBossToken, sid, c, i+1); r.Result == nil || r.Result.IsError {
				t.Fatalf("warm-up %d: %v", i+1, r)
			}
		}
		before := rssKiB(s.Cmd.Process.Pid)
		id := 10
		for _, a := range attacks {
			id++
			r, status := httpRPC(t, s.URL, secBossToken, sid, toolsCall(id, a.tool, a.args), id)
			t.Logf("%s: HTTP %d: %v", a.name, status, r)
			if a.pipeline && !refusedForDepth(r.envelope()) {
				t.Errorf("%s over HTTP: %d %v, want invalid_argument naming the depth limit", a.name, status, r)
			}
		}
		// REST: encoding/json reads bodies up to 10,000 levels deep, so
		// 5,000 reach the pipeline; 100,000 are refused by the door.
		for _, depth := range []int{5_000, 100_000} {
			for _, objects := range []bool{false, true} {
				body := `{"agentId":"boss","toolName":"board_call","input":{"op":"list_projects","args":{"x":` + nested(depth, objects) + `}}}`
				status, r := rest(t, s, secBossToken, body)
				t.Logf("REST %d (objects %v): %d %+v", depth, objects, status, r.Error)
				if r.Success {
					t.Errorf("REST %d levels deep succeeded", depth)
				}
				if depth < 10_000 && !refusedForDepth(r.Error) {
					t.Errorf("REST %d levels deep: %d %+v, want invalid_argument naming the depth limit", depth, status, r.Error)
				}
			}
		}
		// At the limit the arguments reach the plugin, which parses them
		// without overflowing its stack: the board refuses the unknown
		// field, not the host the depth nor the plugin crashing.
		id++
		atLimit := `{"op":"list_projects","args":{"x":` + nested(61, false) + `}}` // 64 levels
		if r, _ := httpRPC(t, s.URL, secBossToken, sid, toolsCall(id, "board_call", atLimit), id); r.Result == nil ||
			refusedForDepth(r.envelope()) || r.envelope() != nil && r.envelope().Code == abi.CodePluginFailed {
			t.Errorf("arguments at the depth limit: %v", r)
		}
		// Still up and answering, on MCP and REST.
		id++
		if r, _ := httpRPC(t, s.URL, secBossToken, sid, toolsCall(id, "nonce", `{"label":"after"}`), id); r.Result == nil || r.Result.IsError {
			t.Errorf("nonce after the attacks: %v", r)
		}
		if _, r := rest(t, s, secBossToken, `{"agentId":"boss","toolName":"nonce","input":{"label":"after"}}`); !r.Success {
			t.Errorf("REST nonce after the attacks: %+v", r.Error)
		}
		select {
		case <-s.Exited:
			t.Fatalf("serve exited:\n%s", shorten(s.Stderr.String(), 2000))
		default:
		}
		after := rssKiB(s.Cmd.Process.Pid)
		t.Logf("resident set: %d KiB before the attacks, %d KiB after", before, after)
		if after-before > 64<<10 {
			t.Errorf("the attacks grew the server by %d KiB", after-before)
		}
	})
}

// TestAbuseCallersReplayOtherWorkersRequestID: worker2 replays the
// request_id of worker1's follow_up on worker1's attempt. Before, the
// stored answer of worker1's call (its session and process ids) came back
// to worker2, although the same follow_up made with a fresh request_id is
// refused by worker2's scope. Now a request_id answers only the identity
// that made the call: worker2 gets idempotency_conflict, over MCP and
// REST, with nothing of worker1's answer, while worker1's own replay still
// returns its first answer. The same holds while worker1's call is still
// running: worker2 neither waits on it (request_in_progress) nor gets its
// answer afterwards.
func TestAbuseCallersReplayOtherWorkersRequestID(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/tasks-control", "testdata/plugins/nonce")
	w := newScopeWorld(t)
	agents := writeAgents(t, `{"agents": [
	  {"id": "boss", "type": "SUPERVISOR", "token": "`+secBossToken+`"},
	  {"id": "worker1", "type": "WORKER", "supervisor": "boss", "token": "`+secWorker1Token+`",
	   "task_id": "`+w.mineTask+`", "attempt_id": "`+w.mineAttempt+`"},
	  {"id": "worker2", "type": "WORKER", "supervisor": "boss", "token": "`+secWorker2Token+`",
	   "task_id": "`+w.theirTask+`", "attempt_id": "`+w.theirAttempt+`"}
	], "permissions": {"WORKER": {"allow": ["follow_up", "nonce", "get_attempt_status", "agent_get_task"]}}}`)
	s := startHTTPServer(t, dir, httpEnv(), "--agents", agents, "--data", w.data)
	worker1, _, err := connectHTTP(t, s.URL, secWorker1Token)
	if err != nil {
		t.Fatal(err)
	}
	worker2, _, err := connectHTTP(t, s.URL, secWorker2Token)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	call := func(sess *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		return callSession(t, ctx, sess, tool, args)
	}
	// foreign checks worker2's answer to a request_id of worker1's: a
	// conflict whose hint sends it to a request_id of its own, holding none
	// of leaks.
	foreign := func(t *testing.T, what string, env *abi.Envelope, raw string, leaks ...string) {
		t.Helper()
		if env == nil || env.Code != abi.CodeIdempotencyConflict || env.Retryable || !strings.Contains(env.Hint, "request_id") {
			t.Errorf("%s: %s, want idempotency_conflict telling it to use its own request_id", what, shorten(raw, 400))
		}
		for _, l := range leaks {
			if l != "" && strings.Contains(raw, l) {
				t.Errorf("%s: the answer holds worker1's %q: %s", what, l, shorten(raw, 400))
			}
		}
	}

	t.Run("replay after completion", func(t *testing.T) {
		args := map[string]any{"action": "send", "attempt_id": w.mineAttempt, "prompt": "echo again", "request_id": "fu-worker1-1"}
		var first tasks.FollowUpOut
		structured(t, call(worker1, "follow_up", args), &first)
		if first.ExecutionProcessID == nil || first.SessionID == "" {
			t.Fatalf("worker1's follow_up = %+v", first)
		}
		// The same call with a fresh request_id: worker2's scope refuses it.
		fresh := maps.Clone(args)
		fresh["request_id"] = "fu-worker2-own"
		if env := clitest.EnvelopeOf(t, call(worker2, "follow_up", fresh)); env.Code != abi.CodePermissionDenied {
			t.Fatalf("worker2's follow_up on worker1's attempt: %+v", env)
		}
		// With worker1's request_id: no replay of worker1's answer.
		res := call(worker2, "follow_up", args)
		var env *abi.Envelope
		if res.IsError {
			e := clitest.EnvelopeOf(t, res)
			env = &e
		}
		foreign(t, "worker2 replaying worker1's request_id over MCP", env, clitest.Text(res), *first.ExecutionProcessID, first.SessionID)
		// Through the REST door too.
		body, _ := json.Marshal(map[string]any{"agentId": "worker2", "toolName": "follow_up", "input": args})
		_, r := rest(t, s, secWorker2Token, string(body))
		raw, _ := json.Marshal(r)
		foreign(t, "worker2 replaying worker1's request_id over REST", r.Error, string(raw), *first.ExecutionProcessID, first.SessionID)
		// worker1's own retry is still answered from the record.
		var again tasks.FollowUpOut
		structured(t, call(worker1, "follow_up", args), &again)
		if again.ExecutionProcessID == nil || *again.ExecutionProcessID != *first.ExecutionProcessID {
			t.Errorf("worker1's replay = %+v, want its first answer %+v", again, first)
		}
	})

	t.Run("duplicate of a running call", func(t *testing.T) {
		// Compiled first, so the keyed call below is running, not compiling.
		structured(t, call(worker1, "nonce", map[string]any{"label": "warm-up"}), &struct{}{})
		type out struct {
			Nonce string `json:"nonce"`
		}
		// worker1 sends the same slow keyed call twice at once: one runs,
		// the other answers request_in_progress at once, which says the
		// key is held by a running call — by effect, not by a sleep. Should
		// one call finish before the other reached the server (a replay
		// then, not request_in_progress), a new key tries again.
		var (
			args    map[string]any
			pending chan *mcp.CallToolResult
		)
		for round := 0; ; round++ {
			keyed := map[string]any{"label": "slow", "sleep_ms": 8000, "request_id": fmt.Sprintf("nonce-worker1-%d", round)}
			args, pending = keyed, make(chan *mcp.CallToolResult, 2)
			for range 2 {
				go func() {
					res, err := worker1.CallTool(ctx, &mcp.CallToolParams{Name: "nonce", Arguments: keyed})
					if err != nil {
						res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
					}
					pending <- res
				}()
			}
			res := <-pending
			if res.IsError && clitest.EnvelopeOf(t, res).Code == abi.CodeRequestInProgress {
				break
			}
			<-pending
			if round == 3 {
				t.Fatalf("worker1's duplicate never found its first call running: %s", clitest.Text(res))
			}
		}
		// worker1's call holds the key and runs: worker2 naming it neither
		// waits on it nor learns anything of it.
		res := call(worker2, "nonce", args)
		var env *abi.Envelope
		if res.IsError {
			e := clitest.EnvelopeOf(t, res)
			env = &e
		}
		foreign(t, "worker2 duplicating worker1's running call", env, clitest.Text(res))
		var first out
		structured(t, <-pending, &first)
		// Once it finished, worker2 does not get its answer either.
		res = call(worker2, "nonce", args)
		env = nil
		if res.IsError {
			e := clitest.EnvelopeOf(t, res)
			env = &e
		}
		foreign(t, "worker2 after worker1's call finished", env, clitest.Text(res), first.Nonce)
	})
}
