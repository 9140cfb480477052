package executor

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
)

// linesNormalizer records each non-empty stdout line as it was printed, as
// a system message, and classifies stderr lines as every normaliser does
// (see stderrEntries). It serves SHELL, the agents whose output has no
// normaliser of its own (Copilot, Droid) and any unknown format, so it also
// picks a session id out of a JSON line that carries one (a Droid event, or
// a Gemini or OpenCode event when a profile asks for lines): that is enough
// to resume them.
type linesNormalizer struct {
	mu        sync.Mutex
	sessionID string
	last      string
	fail      failureNotes
}

// sessionKeys are the top-level fields agents put their session id in.
var sessionKeys = []string{"session_id", "sessionID", "sessionId", "thread_id"}

func (n *linesNormalizer) Line(stream string, line []byte, now time.Time) []Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	text := plainText(line)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if stream != tasks.StreamStderr {
		n.last = cutUTF8(text, MaxContentBytes)
		if n.sessionID == "" {
			n.sessionID = sessionIDOf(line)
		}
	}
	out := rawLineEntries(stream, text, now)
	n.fail.note(out)
	return out
}

func sessionIDOf(line []byte) string {
	raw := bytes.TrimSpace(line)
	if len(raw) == 0 || raw[0] != '{' {
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return ""
	}
	for _, k := range sessionKeys {
		var id string
		if json.Unmarshal(fields[k], &id) == nil && id != "" {
			return id
		}
	}
	return ""
}

func (n *linesNormalizer) Finish(time.Time) []Entry { return nil }

func (n *linesNormalizer) AgentSessionID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sessionID
}

func (n *linesNormalizer) Summary() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last
}

func (n *linesNormalizer) FailureReason() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fail.reason()
}
