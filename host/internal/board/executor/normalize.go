package executor

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi/tasks"
)

// Bounds on what one entry may hold, so an agent that prints a huge file or
// a runaway line cannot make the board keep it.
const (
	// MaxContentBytes caps Entry.Content; longer content is cut and the
	// entry's metadata says so ("truncated", "content_bytes").
	MaxContentBytes = 64 << 10
	// maxDetailBytes caps a tool's input or result kept in metadata.
	maxDetailBytes = 4 << 10
	// maxSummaryRunes caps the one-line summary of a tool call.
	maxSummaryRunes = 200
	// maxPending caps the tool calls remembered while waiting for their
	// results; past it the oldest are forgotten (their results still log,
	// only without the tool's name).
	maxPending = 1024
)

// Entry is one normalised log entry.
type Entry struct {
	Timestamp string         `json:"timestamp"`  // RFC3339Nano UTC
	EntryType string         `json:"entry_type"` // one of the tasks.Entry* constants (abi/tasks)
	Content   string         `json:"content"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// Normalizer turns one agent run's output into entries. A normaliser is for
// one run; it is safe for concurrent use, so stdout and stderr readers may
// feed it directly. It never fails: stdout it cannot parse becomes a system
// message with the text as printed. Every normaliser reads stderr the same
// way: a stack frame makes no entry, a retry notice or routine notice is a
// warning (see IsWarning), a structured log line goes by its level, and
// anything else is an error message as printed.
type Normalizer interface {
	// Line consumes one output line (without the newline) from stream
	// "stdout" or "stderr" and returns zero or more entries. line is not
	// retained.
	Line(stream string, line []byte, now time.Time) []Entry
	// Finish flushes anything pending at process exit.
	Finish(now time.Time) []Entry
	// AgentSessionID is the agent's own session/thread id once seen
	// (Claude's session_id, Codex's thread_id), for resuming; "" if none.
	AgentSessionID() string
	// Summary is the final assistant message of the run (for the
	// transcript), "" if none.
	Summary() string
	// FailureReason is the agent's own account of why the run failed: the
	// most recent error it reported — or a retry notice that came after it,
	// since the agent is then still waiting on what the notice names — or,
	// when it reported no error, the most recent warning; "" if neither. It is one line
	// of at most 300 bytes of valid UTF-8, meant to be appended to the
	// board's failure and timeout reasons, so it is the message itself, not
	// a status code or a stack frame.
	FailureReason() string
}

// NewNormalizer returns the normaliser for outputFormat; an unknown format
// gets the line normaliser, which loses nothing.
func NewNormalizer(outputFormat string) Normalizer {
	switch outputFormat {
	case FormatClaudeStreamJSON:
		return &claudeNormalizer{}
	case FormatCodexJSON:
		return &codexNormalizer{}
	case FormatGeminiStreamJSON:
		return &geminiNormalizer{}
	case FormatOpenCodeJSON:
		return &opencodeNormalizer{}
	default:
		return &linesNormalizer{}
	}
}

// newEntry builds an entry, cutting content to MaxContentBytes and making it
// valid UTF-8 so it can always be stored and marshalled.
func newEntry(now time.Time, typ, content string, meta map[string]any) Entry {
	content = strings.ToValidUTF8(content, "\uFFFD")
	if len(content) > MaxContentBytes {
		if meta == nil {
			meta = map[string]any{}
		}
		meta["truncated"] = true
		meta["content_bytes"] = len(content)
		content = cutUTF8(content, MaxContentBytes)
	}
	return Entry{Timestamp: now.UTC().Format(time.RFC3339Nano), EntryType: typ, Content: content, Metadata: meta}
}

// cutUTF8 returns at most n bytes of s without splitting a rune.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// detail keeps a tool's input or output small enough for metadata: text up
// to maxDetailBytes, and whether it was cut.
func detail(meta map[string]any, key, text string) {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if len(text) > maxDetailBytes {
		meta[key+"_truncated"] = true
		meta[key+"_bytes"] = len(text)
		text = cutUTF8(text, maxDetailBytes)
	}
	meta[key] = text
}

// rawDetail keeps a JSON value in metadata as JSON when it is small, and as
// cut text when it is not, so metadata never grows with the agent's output.
func rawDetail(meta map[string]any, key string, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return
	}
	if len(raw) <= maxDetailBytes && json.Valid(raw) {
		meta[key] = json.RawMessage(bytes.Clone(raw))
		return
	}
	detail(meta, key, string(raw))
}

var ansiPattern = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

// plainText is a raw output line as a person would have seen it: terminal
// escapes removed, trailing blanks and the carriage return of a CRLF gone.
func plainText(line []byte) string {
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansiPattern.ReplaceAllString(s, "")
	}
	return strings.TrimRight(s, " \t\r\n")
}

// rawLineEntries are the entries for a line that is not an event: a stdout
// line is a system message; a stderr line is classified by stderrEntries
// (an error, a warning, a log line by its level, or nothing for a stack
// frame).
func rawLineEntries(stream string, text string, now time.Time) []Entry {
	if stream == tasks.StreamStderr {
		return stderrEntries(text, now)
	}
	return []Entry{newEntry(now, tasks.EntrySystemMessage, text, map[string]any{"stream": stream})}
}

// oneLine is the first line of s, trimmed and cut to maxSummaryRunes, with
// an ellipsis when anything was dropped.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	more := false
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s, more = strings.TrimSpace(s[:i]), true
	}
	if utf8.RuneCountInString(s) > maxSummaryRunes {
		s, more = string([]rune(s)[:maxSummaryRunes]), true
	}
	if more {
		s += " …"
	}
	return s
}

// summaryKeys are the input fields that say best what a tool call does, in
// the order they are tried; they cover Claude Code's, Amp's, Cursor's,
// Gemini CLI's and OpenCode's tool names without a table per agent.
var summaryKeys = []string{
	"command", "cmd", "file_path", "filePath", "notebook_path", "path", "pattern",
	"query", "url", "description", "prompt", "directory_path", "dir_path",
}

// toolSummary is the one-line content of a tool call: "Bash: ls -la",
// "Edit: main.go", or the bare name when no input field says more.
func toolSummary(name string, input json.RawMessage) string {
	if name == "" {
		name = "tool"
	}
	var args map[string]any
	if json.Unmarshal(input, &args) == nil {
		for _, k := range summaryKeys {
			switch v := args[k].(type) {
			case string:
				if strings.TrimSpace(v) != "" {
					return name + ": " + oneLine(v)
				}
			case []any: // e.g. a command given as argv
				parts := make([]string, 0, len(v))
				for _, e := range v {
					if s, ok := e.(string); ok {
						parts = append(parts, s)
					}
				}
				if len(parts) > 0 {
					return name + ": " + oneLine(strings.Join(parts, " "))
				}
			}
		}
		if todos, ok := args["todos"].([]any); ok {
			return name + ": " + plural(len(todos), "item")
		}
	}
	return name
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// textOf reads a tool result or message content that may be a plain string
// or a list of content blocks, keeping the text blocks.
func textOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var b strings.Builder
		for _, bl := range blocks {
			if bl.Text == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(bl.Text)
		}
		return b.String()
	}
	return string(raw)
}

// pendingTools remembers the names of tool calls until their results come,
// bounded by maxPending.
type pendingTools struct {
	order []string
	names map[string]string
}

func (p *pendingTools) add(id, name string) {
	if id == "" {
		return
	}
	if p.names == nil {
		p.names = map[string]string{}
	}
	if _, ok := p.names[id]; !ok {
		p.order = append(p.order, id)
	}
	p.names[id] = name
	for len(p.order) > maxPending {
		delete(p.names, p.order[0])
		p.order = p.order[1:]
	}
}

// take returns the name of tool call id and forgets it.
func (p *pendingTools) take(id string) (string, bool) {
	name, ok := p.names[id]
	if ok {
		delete(p.names, id)
		// order keeps the id until it ages out; the map is what counts.
	}
	return name, ok
}

// event is a JSON stream's event, decoded in place; kind is its type field.
type event interface{ kind() string }

// decodeEvent is how every JSON-stream normaliser starts on a line: a blank
// line makes no entry, and a stderr line or a stdout line that is not a
// JSON event is kept as printed — ok is false and out holds what to return.
// Otherwise ev holds the event, and text is the line as plain text for
// events the caller keeps as printed.
func decodeEvent(stream string, line []byte, now time.Time, ev event) (text string, out []Entry, ok bool) {
	text = plainText(line)
	if strings.TrimSpace(text) == "" {
		return text, nil, false
	}
	if stream == tasks.StreamStderr {
		return text, rawLineEntries(stream, text, now), false
	}
	raw := bytes.TrimSpace(line)
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, ev) != nil || ev.kind() == "" {
		return text, rawLineEntries(stream, text, now), false
	}
	return text, nil, true
}
