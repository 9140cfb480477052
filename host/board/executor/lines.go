package executor

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// linesNormalizer records each non-empty line as it was printed: stdout as a
// system message, stderr as an error message. It serves SHELL and the
// agents whose JSON stream has no normaliser yet, so it also picks a session
// id out of a JSON line that carries one (Gemini's init event, OpenCode's
// and Droid's events): that is enough to resume them.
type linesNormalizer struct {
	mu        sync.Mutex
	sessionID string
	last      string
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
	if stream != StreamStderr {
		n.last = cutUTF8(text, MaxContentBytes)
		if n.sessionID == "" {
			n.sessionID = sessionIDOf(line)
		}
	}
	return []Entry{rawLineEntry(stream, text, now)}
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
