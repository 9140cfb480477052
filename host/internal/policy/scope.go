package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/plugboard/plugboard/abi"
)

// MinTokenLength is the shortest bearer token the server accepts, from an
// agents file or the --http-token: 32 characters (openssl rand -hex 32
// gives 64), so that guessing one over the network is hopeless.
const MinTokenLength = 32

// Grant is an agents file's "scope" field: "all" (every task and attempt),
// "own" (the agent's own task and attempt only) or a list of task ids the
// agent reaches whole, besides its own work.
type Grant struct {
	All   bool
	Tasks []string
}

// UnmarshalJSON reads "all", "own" or a list of task ids; null leaves g as
// it is (encoding/json's convention).
func (g *Grant) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var word string
	if err := json.Unmarshal(b, &word); err == nil {
		switch word {
		case "all":
			*g = Grant{All: true}
			return nil
		case "own":
			*g = Grant{}
			return nil
		}
	}
	var tasks []string
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&tasks); err != nil || tasks == nil {
		return errors.New(`scope must be "all", "own" or a list of task ids`)
	}
	*g = Grant{Tasks: tasks}
	return nil
}

// MarshalJSON writes the form UnmarshalJSON reads.
func (g Grant) MarshalJSON() ([]byte, error) {
	switch {
	case g.All:
		return []byte(`"all"`), nil
	case g.Tasks == nil:
		return []byte(`"own"`), nil
	}
	return json.Marshal(g.Tasks)
}

// Scope is the board work a caller may reach: everything (All), or the
// tasks it reaches whole (the task, its attempts, their sessions, logs and
// files) and the single attempts it reaches (each with its task's record,
// but not the task's other attempts). The board API applies it to every
// board operation (host/internal/boardapi); mail and the decision log are scoped
// to the caller by construction (its own inbox, its own entries).
type Scope struct {
	All      bool
	Tasks    []string
	Attempts []string
}

// HasTask reports whether the scope holds task id whole.
func (s Scope) HasTask(id string) bool { return s.All || slices.Contains(s.Tasks, id) }

// HasAttempt reports whether the scope names attempt id itself (an
// attempt of a task it holds whole is reachable too; only the board knows
// which task an attempt belongs to).
func (s Scope) HasAttempt(id string) bool { return s.All || slices.Contains(s.Attempts, id) }

// Empty reports whether the scope reaches nothing on the board.
func (s Scope) Empty() bool { return !s.All && len(s.Tasks) == 0 && len(s.Attempts) == 0 }

// Scope returns the board work caller c may reach. A SUPERVISOR or an
// ORCHESTRATOR reaches everything; a WORKER its own work — the attempt of
// its attempt_id (with its task's record), else the whole task of its
// task_id, else nothing. An agents-file "scope" replaces that default:
// "all", "own", or a list of task ids added to the agent's own work. The
// local identity reaches everything, and so does a call without a caller
// (the dispatcher's policy refuses those before any board operation). An
// attempt identity (AttemptCaller) reaches exactly its own attempt.
func (p *Policy) Scope(c *abi.Caller) Scope {
	if c == nil || c.ID == LocalID {
		return Scope{All: true}
	}
	if id, ok := AttemptOf(c); ok {
		return Scope{Attempts: []string{id}}
	}
	a, ok := p.Agent(c.ID)
	if !ok {
		// An identity the agents file does not know: its role decides,
		// and a WORKER without an entry has no work of its own.
		return Scope{All: c.Role != Worker}
	}
	g := a.Scope
	if g == nil {
		if a.Type != Worker {
			return Scope{All: true}
		}
		g = &Grant{}
	}
	if g.All {
		return Scope{All: true}
	}
	var s Scope
	switch {
	case a.AttemptID != "":
		s.Attempts = []string{a.AttemptID}
	case a.TaskID != "":
		s.Tasks = []string{a.TaskID}
	}
	for _, t := range g.Tasks {
		if !slices.Contains(s.Tasks, t) {
			s.Tasks = append(s.Tasks, t)
		}
	}
	return s
}
