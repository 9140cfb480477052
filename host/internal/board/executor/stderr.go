package executor

import (
	"regexp"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
)

// What the agents print on stderr, and what each kind of line becomes. Every
// normaliser reads stderr the same way (stderrEntries); the board keeps
// every raw line separately, so a line that makes no entry is not lost.
//
//   - A stack-trace line (a JavaScript "    at f (file:1:2)" frame, a Rust
//     "   3: <unknown>" backtrace frame or its "Stack backtrace:" header)
//     makes no entry: it would bury the message above it.
//   - A structured log line is classified by its level: OpenCode's
//     --print-logs logfmt ("timestamp=… level=ERROR … message=\"stream
//     error\" … error.error=\"AI_APICallError: …\"") and Codex's tracing
//     ("2026-11-24T02:01:16.433420Z ERROR codex_api::…: failed to …").
//     ERROR is an error message, WARN a warning, anything else a system
//     message; the content is the message and, when the line names one,
//     the error, not the whole line.
//   - A retry, backoff or reconnect notice ("Attempt 2 failed. Retrying
//     with backoff...", "Reconnecting... 2/5") and the notices the CLIs
//     print on every run ("Warning: …", "YOLO mode is enabled", "Approval
//     mode overridden", "Ripgrep is not available", "Falling back to …")
//     are warnings.
//   - Anything else is an error message, as printed, except that a Gemini
//     CLI line's "Full report available at: <file>" is moved to the
//     metadata ("report_path"), leaving what failed and why.
var (
	// stackFrame matches the lines of a stack trace. Rust frames must be
	// indented ("   0: <unknown>", "  10: …") so that "404: Not Found" at
	// the start of a line is still read as a message.
	stackFrame = regexp.MustCompile(`^\s+at\s|^\s+\d+:\s|^\s*Stack backtrace:\s*$`)
	// retryNotice matches a notice that the CLI is about to try again.
	retryNotice = regexp.MustCompile(`(?i)^\s*attempt \d+ failed\b|^\s*reconnecting\b|\bretrying\b`)
	// finalRetry matches a retry notice that says the retrying is over,
	// which is an error like any other.
	finalRetry = regexp.MustCompile(`(?i)\b(?:giving up|gave up|not retrying|no longer retrying)\b`)
	// harmlessNotice matches the warnings CLIs print on (almost) every run.
	harmlessNotice = regexp.MustCompile(`(?i)^\s*\[?warn(?:ing)?\]?(?::|\s)|^\s*yolo mode is enabled|^\s*approval mode overridden|^\s*ripgrep\b.*\bnot available|(?:^|[.!]\s+)falling back\b`)
	// tracingLine matches a Rust tracing line: timestamp, level, target.
	tracingLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:?\d\d)\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+([^\s:]+(?:::[^\s:]+)*):\s*(.*)$`)
	// fullReport matches Gemini CLI's error lines that point at a report
	// file between what failed and why: "Error when talking to Gemini API
	// Full report available at: /tmp/gemini-client-error-….json Error: …".
	fullReport = regexp.MustCompile(`^(.*?)[.:]?\s+Full report available at:\s+(\S+)\s*(.*)$`)
)

// classifyBytes is how much of a line the patterns look at: what kind of
// line it is shows at its start, and a runaway line must not cost a
// regexp pass over megabytes.
const classifyBytes = 8 << 10

// stderrEntries classifies one stderr line (already plain text) as the
// comment above says.
func stderrEntries(text string, now time.Time) []Entry {
	head := cutUTF8(text, classifyBytes)
	if strings.TrimSpace(head) == "" || stackFrame.MatchString(head) {
		return nil
	}
	meta := map[string]any{"stream": tasks.StreamStderr}
	if level, content, ok := logLine(text, head, meta); ok {
		meta["level"] = level
		switch level {
		case "error":
			return []Entry{newEntry(now, tasks.EntryErrorMessage, content, meta)}
		default: // "warning" makes the entry a warning; the rest are system messages
			return []Entry{newEntry(now, tasks.EntrySystemMessage, content, meta)}
		}
	}
	if m := fullReport.FindStringSubmatchIndex(head); m != nil && strings.TrimSpace(head[m[2]:m[3]]) != "" {
		// The report's path goes to the metadata, so the entry (and a
		// failure reason made of it) reads "what failed: why".
		meta["report_path"] = head[m[4]:m[5]]
		what, why := strings.TrimSpace(head[m[2]:m[3]]), strings.TrimSpace(text[m[6]:])
		text = what
		if why != "" {
			text += ": " + why
		}
		head = cutUTF8(text, classifyBytes)
	}
	if isWarningText(head) {
		return []Entry{warningEntry(now, text, meta)}
	}
	return []Entry{newEntry(now, tasks.EntryErrorMessage, text, meta)}
}

// isWarningText says whether a message is a retry notice or one of the
// harmless notices CLIs print; the normalisers also apply it to messages
// their JSON streams carry as errors (Codex's "Reconnecting... 2/5").
func isWarningText(s string) bool {
	s = cutUTF8(s, classifyBytes)
	if retryNotice.MatchString(s) && !finalRetry.MatchString(s) {
		return true
	}
	return harmlessNotice.MatchString(s)
}

// logLine reads a structured log line: its level ("error", "warning",
// "info", "debug", "trace" or the level as written, lower case), and the
// content to log. head is the start of text the patterns look at. It adds
// what else it learns to meta. ok is false for a line that is not a log
// line.
func logLine(text, head string, meta map[string]any) (level, content string, ok bool) {
	if m := tracingLine.FindStringSubmatchIndex(head); m != nil {
		target := head[m[4]:m[5]]
		meta["target"] = target
		content = strings.TrimSpace(text[m[6]:])
		if content == "" {
			content = target
		}
		return logLevel(head[m[2]:m[3]]), content, true
	}
	if !strings.Contains(head, "level=") && !strings.Contains(head, "lvl=") {
		return "", "", false
	}
	fields, ok := logfmt(cutUTF8(text, MaxContentBytes))
	if !ok {
		return "", "", false
	}
	raw := fields["level"]
	if raw == "" {
		raw = fields["lvl"]
	}
	msg := fields["message"]
	if msg == "" {
		msg = fields["msg"]
	}
	var cause string
	for _, k := range []string{"error.error", "error.message", "error", "err", "cause"} {
		if v := strings.TrimSpace(fields[k]); v != "" {
			cause = v
			break
		}
	}
	switch {
	case msg != "" && cause != "":
		content = msg + ": " + cause
	case msg != "":
		content = msg
	case cause != "":
		content = cause
	default:
		content = text
	}
	if id := fields["session.id"]; id != "" {
		meta["session_id"] = id
	}
	return logLevel(raw), content, true
}

func logLevel(raw string) string {
	switch l := strings.ToLower(raw); l {
	case "error", "err", "fatal", "panic", "critical", "crit":
		return "error"
	case "warn", "warning":
		return "warning"
	default:
		return l
	}
}

// maxLogfmtFields bounds what logfmt keeps of one line.
const maxLogfmtFields = 64

// logfmt parses a line of key=value pairs (values bare or double-quoted
// with backslash escapes). ok is true when the line is such pairs from its
// start, at least two of them, and one is the level; parsing stops at the
// first token that is not a pair.
func logfmt(s string) (map[string]string, bool) {
	fields := map[string]string{}
	i := 0
	for len(fields) < maxLogfmtFields {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			break
		}
		k := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' && s[i] != '"' {
			i++
		}
		if i >= len(s) || s[i] != '=' || i == k {
			break
		}
		key := s[k:i]
		i++ // '='
		var val strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					switch s[i+1] {
					case 'n':
						val.WriteByte('\n')
					case 't':
						val.WriteByte('\t')
					default:
						val.WriteByte(s[i+1])
					}
					i += 2
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				val.WriteByte(c)
				i++
			}
			if !closed {
				break
			}
		} else {
			v := i
			for i < len(s) && s[i] != ' ' && s[i] != '\t' {
				i++
			}
			val.WriteString(s[v:i])
		}
		fields[key] = val.String()
	}
	_, hasLevel := fields["level"]
	_, hasLvl := fields["lvl"]
	return fields, len(fields) >= 2 && (hasLevel || hasLvl)
}
