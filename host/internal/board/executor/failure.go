package executor

import (
	"regexp"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
)

// A warning is a system message whose Metadata["level"] is "warning": a
// retry or reconnect notice, a notice the CLI prints on every run ("YOLO
// mode is enabled", "Ripgrep is not available"), a warning event of an
// agent's stream. It says the agent is waiting or carrying on, not that it
// made progress or failed.
const (
	metaLevel    = "level"
	levelWarning = "warning"
)

// IsWarning says whether e is a warning: a system message with
// Metadata["level"] = "warning".
func IsWarning(e Entry) bool {
	if e.EntryType != tasks.EntrySystemMessage {
		return false
	}
	level, _ := e.Metadata[metaLevel].(string)
	return level == levelWarning
}

// warningEntry builds a warning entry; meta may be nil.
func warningEntry(now time.Time, content string, meta map[string]any) Entry {
	if meta == nil {
		meta = map[string]any{}
	}
	meta[metaLevel] = levelWarning
	return newEntry(now, tasks.EntrySystemMessage, content, meta)
}

// standingNotice matches the notices a CLI prints on every run, whatever
// happens next: they never explain a failure, so FailureReason skips them.
var standingNotice = regexp.MustCompile(`(?i)yolo mode is enabled|approval mode overridden|ripgrep\b.*\bnot available|256-color|falling back to (grep|(the )?built-in)`)

// maxReasonBytes caps FailureReason.
const maxReasonBytes = 300

// metaGeneric marks an error entry whose content is only a status ("Run
// failed", "error_during_execution") rather than the agent's words: it
// becomes the failure reason only when nothing better was reported. The
// mark is removed before the entry leaves the normaliser.
const metaGeneric = "\x00generic"

// failureNotes remembers the most recent error and warning an agent
// reported, for FailureReason. Its owner's lock guards it.
type failureNotes struct {
	err, warn string
	// retrying is a retry notice that came after the last error: the agent
	// is still trying, and the notice says what it is waiting for (Codex
	// logs a connection error, then "Reconnecting... waiting for network"
	// until it is stopped).
	retrying string
}

// note reads the entries a line produced, in order, and removes the
// internal metaGeneric mark.
func (f *failureNotes) note(entries []Entry) {
	for _, e := range entries {
		switch {
		case e.EntryType == tasks.EntryErrorMessage:
			if _, generic := e.Metadata[metaGeneric]; generic {
				delete(e.Metadata, metaGeneric)
				if f.err == "" {
					f.err = reasonText(e.Content)
				}
				continue
			}
			if r := reasonText(e.Content); r != "" {
				f.err, f.retrying = r, ""
			}
		case IsWarning(e) && !standingNotice.MatchString(cutUTF8(e.Content, classifyBytes)):
			if r := reasonText(e.Content); r != "" {
				f.warn = r
				if retryNotice.MatchString(cutUTF8(e.Content, classifyBytes)) {
					f.retrying = r
				}
			}
		}
	}
}

func (f *failureNotes) reason() string {
	switch {
	case f.retrying != "":
		return f.retrying
	case f.err != "":
		return f.err
	}
	return f.warn
}

// genericError is an error entry whose content is a status, not a message
// (see metaGeneric).
func genericError(now time.Time, content string, meta map[string]any) Entry {
	if meta == nil {
		meta = map[string]any{}
	}
	meta[metaGeneric] = true
	return newEntry(now, tasks.EntryErrorMessage, content, meta)
}

// reasonText is the first non-blank line of s, trimmed, cut to
// maxReasonBytes (with an ellipsis when cut) and valid UTF-8.
func reasonText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	s = ""
	for _, line := range lines {
		if line = strings.TrimSpace(line); line != "" {
			s = line
			break
		}
	}
	if len(s) > maxReasonBytes {
		s = strings.TrimSpace(cutUTF8(s, maxReasonBytes-len("…"))) + "…"
	}
	return s
}
