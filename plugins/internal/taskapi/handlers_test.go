//go:build !wasip1

package taskapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// boardCall is one board operation a tool made, with the board's answer.
type boardCall struct {
	Op     string          `json:"op"`
	Args   json.RawMessage `json:"args,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *abi.Envelope   `json:"error,omitempty"`
}

// handlerCase is a tool call recorded against the real board (host/internal/board
// through host/internal/boardapi, SHELL executor, a one-repo project): the
// arguments, the board operations the tool made and their answers, and the
// tool's result.
type handlerCase struct {
	Name      string          `json:"name"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Board     []boardCall     `json:"board"`
	Output    json.RawMessage `json:"output"`
	IsError   bool            `json:"is_error,omitempty"`
}

// boardResults maps each board operation to the Go type its result
// decodes into, field for field: decoding refuses unknown fields, so a
// field the board adds, and the plugin would drop, fails the test.
var boardResults = map[string]func() any{
	abi.OpListProjects:       func() any { return new(ProjectsOut) },
	abi.OpListRepos:          func() any { return new(ReposOut) },
	abi.OpListExecutors:      func() any { return new(ExecutorsOut) },
	abi.OpListTasks:          func() any { return new(TasksOut) },
	abi.OpGetTask:            func() any { return new(TaskDetail) },
	abi.OpListTaskAttempts:   func() any { return new(AttemptsOut) },
	abi.OpGetAttemptStatus:   func() any { return new(StatusOut) },
	abi.OpTailAttemptLogs:    func() any { return new(boardLogs) },
	abi.OpTailSessionMessage: func() any { return new(MessagesOut) },
	abi.OpGetContext:         func() any { return new(ContextOut) },
	abi.OpCreateTask:         func() any { return new(Task) },
	abi.OpUpdateTask:         func() any { return new(Task) },
	abi.OpDeleteTask:         func() any { return new(DeleteTaskOut) },
	abi.OpStartTaskAttempt:   func() any { return new(StartOut) },
	abi.OpFollowUp:           func() any { return new(FollowUpOut) },
	abi.OpStopAttempt:        func() any { return new(StopOut) },
	abi.OpGetAttemptChanges:  func() any { return new(ChangesOut) },
	abi.OpGetAttemptPatch:    func() any { return new(PatchOut) },
	abi.OpGetAttemptFile:     func() any { return new(boardFile) },
	abi.OpReviewQueue:        func() any { return new(ReviewQueueOut) },
	abi.OpApproveAttempt:     func() any { return new(ApproveOut) },
	abi.OpRequestChanges:     func() any { return new(RequestChangesOut) },
}

func loadCases(t *testing.T) []handlerCase {
	t.Helper()
	files, err := filepath.Glob("testdata/cases/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded cases: %v", err)
	}
	var cases []handlerCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c handlerCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases = append(cases, c)
	}
	return cases
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// TestHandlersReplay calls each tool as recorded: the tool must make the
// same board operations with the same arguments (field names of the
// host/internal/board argument types, request_id never among them) and give the
// same result, which must validate against its output schema.
func TestHandlersReplay(t *testing.T) {
	_, tools := manifest(t)
	covered := map[string]bool{}
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			covered[c.Tool] = true
			var made []boardCall
			restore := sdk.SetTestHost(func(name string, req []byte) []byte {
				if name != abi.FuncBoard {
					return nil
				}
				var r boardCall
				if err := json.Unmarshal(req, &r); err != nil {
					t.Fatalf("board request %s: %v", req, err)
				}
				i := len(made)
				made = append(made, r)
				if i >= len(c.Board) {
					t.Fatalf("board call %d (%s) was not recorded", i, req)
				}
				want := c.Board[i]
				if r.Op != want.Op || !jsonEqual(r.Args, want.Args) {
					t.Errorf("board call %d = %s %s, want %s %s", i, r.Op, r.Args, want.Op, want.Args)
				}
				if bytes.Contains(r.Args, []byte(`"request_id"`)) {
					t.Errorf("request_id reached the board: %s", r.Args)
				}
				resp, _ := json.Marshal(abi.HostResponse{Result: want.Result, Error: want.Error})
				return resp
			})
			defer restore()

			raw, err := sdk.HandleCall([]byte(`{"params":{"name":"` + c.Tool + `","arguments":` + string(c.Arguments) + `},"context":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			var res abi.CallResult
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			if len(made) != len(c.Board) {
				t.Errorf("%d board calls, want %d", len(made), len(c.Board))
			}
			if res.IsError != c.IsError || !jsonEqual(res.StructuredContent, c.Output) {
				t.Errorf("result (isError %v)\n%s\nwant (isError %v)\n%s", res.IsError, res.StructuredContent, c.IsError, c.Output)
			}
			if res.IsError {
				// Board envelopes reach the agent unchanged.
				if n := len(c.Board); n == 0 || c.Board[n-1].Error == nil {
					t.Errorf("an error result without a board envelope")
				} else if want, _ := json.Marshal(c.Board[n-1].Error); !jsonEqual(res.StructuredContent, want) {
					t.Errorf("envelope %s, want the board's %s", res.StructuredContent, want)
				}
				return
			}
			var out any
			json.Unmarshal(res.StructuredContent, &out)
			if err := resolved(t, tools[c.Tool].OutputSchema).Validate(out); err != nil {
				t.Errorf("result does not validate against the output schema: %v", err)
			}
			for _, bc := range c.Board {
				if bc.Error != nil {
					continue
				}
				dec := json.NewDecoder(bytes.NewReader(bc.Result))
				dec.DisallowUnknownFields()
				if err := dec.Decode(boardResults[bc.Op]()); err != nil {
					t.Errorf("board result of %s does not decode without loss: %v", bc.Op, err)
				}
			}
		})
	}
	for name := range specTools {
		if !covered[name] {
			t.Errorf("no recorded case calls %s", name)
		}
	}
}

// TestLogEntriesFlattened checks the shape the agent gets: one object per
// entry, normalized entries with entry_type (and metadata), raw ones with
// stream, never the board's nested entry.
func TestLogEntriesFlattened(t *testing.T) {
	seen := map[Channel]bool{}
	for _, c := range loadCases(t) {
		if c.Tool != "tail_attempt_logs" || c.IsError {
			continue
		}
		var out struct {
			Channel Channel          `json:"channel"`
			Entries []map[string]any `json:"entries"`
		}
		if err := json.Unmarshal(c.Output, &out); err != nil {
			t.Fatal(err)
		}
		for _, e := range out.Entries {
			seen[out.Channel] = true
			if e["entry"] != nil || e["timestamp"] == nil || e["content"] == nil || e["entry_index"] == nil {
				t.Errorf("%s: entry %v is not flat", c.Name, e)
			}
			switch out.Channel {
			case ChannelNormalized:
				if e["entry_type"] == nil || e["stream"] != nil {
					t.Errorf("%s: normalized entry %v", c.Name, e)
				}
			case ChannelRaw:
				if e["stream"] == nil || e["entry_type"] != nil || e["metadata"] != nil {
					t.Errorf("%s: raw entry %v", c.Name, e)
				}
			}
		}
	}
	if !seen[ChannelNormalized] || !seen[ChannelRaw] {
		t.Errorf("recorded cases cover channels %v; want both", seen)
	}
}

// TestBlockedCodes checks that every blocked artifact answer carries the
// spec's code for guardrail blocks, and a hint.
func TestBlockedCodes(t *testing.T) {
	reasons := map[string]bool{}
	for _, c := range loadCases(t) {
		if !strings.HasPrefix(c.Tool, "get_attempt_") || c.IsError {
			continue
		}
		var out struct {
			Blocked       bool    `json:"blocked"`
			BlockedReason *string `json:"blocked_reason"`
			Code          string  `json:"code"`
			Hint          string  `json:"hint"`
		}
		if err := json.Unmarshal(c.Output, &out); err != nil {
			t.Fatal(err)
		}
		if !out.Blocked {
			if out.BlockedReason != nil || out.Code != "" {
				t.Errorf("%s: not blocked but reason %v, code %q", c.Name, out.BlockedReason, out.Code)
			}
			continue
		}
		if out.BlockedReason == nil || out.Hint == "" {
			t.Errorf("%s: blocked without reason or hint: %s", c.Name, c.Output)
			continue
		}
		reasons[*out.BlockedReason] = true
		want := ""
		if *out.BlockedReason != ReasonPathOutsideWorkspace && *out.BlockedReason != ReasonSummaryFailed {
			want = string(CodeBlockedGuardrails)
		}
		if out.Code != want {
			t.Errorf("%s: blocked_reason %s with code %q, want %q", c.Name, *out.BlockedReason, out.Code, want)
		}
	}
	for _, r := range []string{ReasonThresholdExceeded, ReasonTooManyPaths, ReasonSizeExceeded, ReasonPathOutsideWorkspace} {
		if !reasons[r] {
			t.Errorf("no recorded case is blocked with %s", r)
		}
	}
}

// TestRequestIDStaysWithTheHost checks each keyed tool with request_id
// set: the board never sees it.
func TestRequestIDStaysWithTheHost(t *testing.T) {
	keyed := map[string]bool{}
	for _, c := range loadCases(t) {
		if bytes.Contains(c.Arguments, []byte(`"request_id"`)) {
			keyed[c.Tool] = true
		}
	}
	for _, name := range []string{"create_task", "start_task_attempt", "follow_up", "request_changes"} {
		if !keyed[name] {
			t.Errorf("no recorded %s call carries request_id", name)
		}
	}
	// TestHandlersReplay checks that none of them passed it on.
}
