package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Attempt states (tasks.AttemptState values).
const (
	StateIdle      = tasks.StateIdle
	StateRunning   = tasks.StateRunning
	StateCompleted = tasks.StateCompleted
	StateFailed    = tasks.StateFailed
)

// AttemptArgs identifies an attempt.
type AttemptArgs = tasks.AttemptIn

// StatusResult answers get_attempt_status.
type StatusResult = tasks.StatusOut

// deriveState is the spec's rule: the newest process among coding agent,
// setup and cleanup scripts decides; none → idle, running → running,
// completed → completed, failed → failed with "failed (exit_code=N)",
// followed by the reason when one is known (the agent's last error, a
// timeout), killed → failed with "killed".
func deriveState(p *store.Process) (tasks.AttemptState, *string) {
	if p == nil {
		return StateIdle, nil
	}
	switch p.Status {
	case store.ProcRunning:
		return StateRunning, nil
	case store.ProcCompleted:
		return StateCompleted, nil
	case store.ProcKilled:
		s := "killed"
		if p.EndReason != "" {
			s += " (" + p.EndReason + ")"
		}
		return StateFailed, &s
	}
	s := "failed"
	switch {
	case p.ExitCode != nil && p.EndReason != "":
		s += " (exit_code=" + strconv.Itoa(*p.ExitCode) + "): " + p.EndReason
	case p.ExitCode != nil:
		s += " (exit_code=" + strconv.Itoa(*p.ExitCode) + ")"
	case p.EndReason != "":
		s += " (" + p.EndReason + ")"
	}
	return StateFailed, &s
}

func (b *Board) attempt(ctx context.Context, id string) (store.Attempt, error) {
	if err := requireID("attempt_id", id, "list_task_attempts"); err != nil {
		return store.Attempt{}, err
	}
	a, err := b.store.GetAttempt(ctx, id)
	if err != nil {
		return store.Attempt{}, notFound(err, "attempt", "attempt_id", id, "list_task_attempts")
	}
	return a, nil
}

// latestProcess returns the attempt's state-deciding process, or nil.
func (b *Board) latestProcess(ctx context.Context, attemptID string) (*store.Process, error) {
	p, err := b.store.LatestProcess(ctx, attemptID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// GetAttemptStatus returns an attempt's metadata, latest session and
// process, and derived state.
func (b *Board) GetAttemptStatus(ctx context.Context, a AttemptArgs) (StatusResult, error) {
	at, err := b.attempt(ctx, a.AttemptID)
	if err != nil {
		return StatusResult{}, err
	}
	task, err := b.store.GetTask(ctx, at.TaskID)
	if err != nil {
		return StatusResult{}, err
	}
	out := StatusResult{AttemptID: at.ID, TaskID: at.TaskID, TaskStatus: tasks.TaskStatus(task.Status), WorkspaceBranch: at.Branch,
		Executor: at.Executor, CreatedAt: at.CreatedAt, UpdatedAt: at.UpdatedAt}
	if se, err := b.store.LatestSession(ctx, at.ID); err == nil {
		out.LatestSessionID = &se.ID
		q, err := b.store.QueuedMessage(ctx, se.ID)
		if err != nil {
			return StatusResult{}, err
		}
		out.QueuedFollowUp = q != nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return StatusResult{}, err
	}
	p, err := b.latestProcess(ctx, at.ID)
	if err != nil {
		return StatusResult{}, err
	}
	if p != nil {
		out.LatestExecutionProcessID, out.LatestRunReason = &p.ID, ptr(tasks.RunReason(p.RunReason))
	}
	state, failure := deriveState(p)
	out.State, out.FailureSummary = string(state), failure
	if out.LastActivityAt, err = b.store.LastActivity(ctx, at.ID); err != nil {
		return StatusResult{}, err
	}
	return out, nil
}

// Log paging limits.
const (
	DefaultLogLimit = 50
	MaxLogLimit     = 500
)

// LogsArgs are tail_attempt_logs' arguments: tasks.LogsIn, and the
// execution_process_id of a process other than the latest, which only the
// CLI passes.
type LogsArgs struct {
	AttemptID          string `json:"attempt_id"`
	Channel            string `json:"channel,omitempty"`
	Limit              int    `json:"limit,omitempty"`
	Cursor             *int64 `json:"cursor,omitempty"`
	AfterEntryIndex    *int64 `json:"after_entry_index,omitempty"`
	ExecutionProcessID string `json:"execution_process_id,omitempty"`
}

// LogsResult answers tail_attempt_logs: the entries as stored, which the
// tool flattens.
type LogsResult = tasks.BoardLogs[json.RawMessage]

// LogEntry is one entry of a LogsResult.
type LogEntry = tasks.BoardLogEntry[json.RawMessage]

// Page describes where a page sits in its history: HasMore says older
// entries exist (tail and cursor pages) or newer ones beyond this page
// (after pages); NextCursor is the cursor for the next older page, when
// one exists; LastIndex is the newest index returned, for the next after_*
// call.
type Page = tasks.Page

func mixedPagination(afterField string) error {
	return abi.NewEnvelope(abi.CodeMixedPagination, "cursor and "+afterField+" were both given",
		"use cursor to page older history or "+afterField+" to fetch only newer entries, not both").
		WithDetail("fields", []string{"cursor", afterField})
}

// TailAttemptLogs returns a page of the log of the attempt's latest
// process (or of execution_process_id): the newest entries by default,
// older ones with cursor, only newer ones with after_entry_index.
func (b *Board) TailAttemptLogs(ctx context.Context, a LogsArgs) (LogsResult, error) {
	if a.Cursor != nil && a.AfterEntryIndex != nil {
		return LogsResult{}, mixedPagination("after_entry_index")
	}
	at, err := b.attempt(ctx, a.AttemptID)
	if err != nil {
		return LogsResult{}, err
	}
	channel := a.Channel
	if channel == "" {
		channel = store.ChannelNormalized
	}
	if channel != store.ChannelNormalized && channel != store.ChannelRaw {
		return LogsResult{}, invalid("channel", fmt.Sprintf("channel %q is not normalized or raw", channel), "omit channel or pass normalized | raw")
	}
	limit, err := clampLimit("limit", a.Limit, DefaultLogLimit, MaxLogLimit)
	if err != nil {
		return LogsResult{}, err
	}
	if err := nonNegative("cursor", a.Cursor); err != nil {
		return LogsResult{}, err
	}
	out := LogsResult{AttemptID: at.ID, Channel: tasks.Channel(channel), Entries: []LogEntry{}}
	var p *store.Process
	if a.ExecutionProcessID != "" {
		if err := requireID("execution_process_id", a.ExecutionProcessID, "get_attempt_status"); err != nil {
			return LogsResult{}, err
		}
		proc, err := b.store.GetProcess(ctx, a.ExecutionProcessID)
		if err != nil || proc.AttemptID != at.ID {
			return LogsResult{}, abi.NewEnvelope(abi.CodeNotFound, "no process "+a.ExecutionProcessID+" in attempt "+at.ID,
				"omit execution_process_id to read the latest process").WithDetail("field", "execution_process_id")
		}
		p = &proc
	} else if p, err = b.latestProcess(ctx, at.ID); err != nil {
		return LogsResult{}, err
	}
	if p == nil {
		return out, nil
	}
	out.ExecutionProcessID, out.RunReason, out.ProcessStatus = &p.ID, ptr(tasks.RunReason(p.RunReason)), ptr(tasks.ProcessStatus(p.Status))
	var page store.LogPage
	switch {
	case a.AfterEntryIndex != nil:
		page, err = b.store.LogAfter(ctx, p.ID, channel, *a.AfterEntryIndex, limit)
	case a.Cursor != nil:
		page, err = b.store.LogTail(ctx, p.ID, channel, *a.Cursor, limit)
	default:
		page, err = b.store.LogTail(ctx, p.ID, channel, -1, limit)
	}
	if err != nil {
		return LogsResult{}, err
	}
	out.Entries = convert(page.Entries, func(e store.LogEntry) LogEntry { return LogEntry{EntryIndex: e.Index, Entry: e.Entry} })
	out.Page = Page{HasMore: page.HasMore, NextCursor: page.NextCursor}
	if n := len(page.Entries); n > 0 {
		last := page.Entries[n-1].Index
		out.Page.LastIndex = &last
	} else if a.AfterEntryIndex != nil {
		out.Page.LastIndex = a.AfterEntryIndex
	}
	return out, nil
}

func nonNegative(field string, v *int64) error {
	if v != nil && *v < 0 {
		return invalid(field, fmt.Sprintf("%s must be ≥ 0, got %d", field, *v), "pass "+field+" from a previous page, or omit it")
	}
	return nil
}

// Transcript paging limits.
const (
	DefaultMessageLimit = 20
	MaxMessageLimit     = 200
)

// MessagesArgs are tail_session_messages' arguments.
type MessagesArgs = tasks.MessagesIn

// MessagesResult answers tail_session_messages.
type MessagesResult = tasks.MessagesOut

// resolveSession applies exactly-one targeting: session_id, or attempt_id
// resolved to its latest session.
func (b *Board) resolveSession(ctx context.Context, sessionID, attemptID, tool string) (store.Session, error) {
	switch {
	case sessionID != "" && attemptID != "":
		return store.Session{}, abi.NewEnvelope(abi.CodeAmbiguousTarget, "both attempt_id and session_id were given",
			"pass exactly one target: attempt_id (resolves to its latest session) or session_id").
			WithDetail("fields", []string{"attempt_id", "session_id"})
	case sessionID == "" && attemptID == "":
		return store.Session{}, abi.NewEnvelope(abi.CodeMissingRequired, "one of attempt_id or session_id is required",
			"pass attempt_id (from list_task_attempts) or session_id (from get_attempt_status)").WithDetail("field", "attempt_id")
	case sessionID != "":
		if err := requireID("session_id", sessionID, "get_attempt_status"); err != nil {
			return store.Session{}, err
		}
		se, err := b.store.GetSession(ctx, sessionID)
		return se, notFound(err, "session", "session_id", sessionID, "get_attempt_status")
	}
	at, err := b.attempt(ctx, attemptID)
	if err != nil {
		return store.Session{}, err
	}
	se, err := b.store.LatestSession(ctx, at.ID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, abi.NewEnvelope(abi.CodeNoSessionYet, "attempt "+at.ID+" has no session yet",
			"call get_attempt_status(attempt_id) and retry "+tool+" once latest_session_id is non-null").
			WithDetail("attempt_id", at.ID)
	}
	return se, err
}

// TailSessionMessages returns a page of a session's transcript: one
// message per coding-agent turn, its prompt and summary.
func (b *Board) TailSessionMessages(ctx context.Context, a MessagesArgs) (MessagesResult, error) {
	if a.Cursor != nil && a.AfterTurnIndex != nil {
		return MessagesResult{}, mixedPagination("after_turn_index")
	}
	se, err := b.resolveSession(ctx, a.SessionID, a.AttemptID, "tail_session_messages")
	if err != nil {
		return MessagesResult{}, err
	}
	limit, err := clampLimit("limit", a.Limit, DefaultMessageLimit, MaxMessageLimit)
	if err != nil {
		return MessagesResult{}, err
	}
	if err := nonNegative("cursor", a.Cursor); err != nil {
		return MessagesResult{}, err
	}
	var page store.TurnPage
	switch {
	case a.AfterTurnIndex != nil:
		page, err = b.store.TurnAfter(ctx, se.ID, *a.AfterTurnIndex, limit)
	case a.Cursor != nil:
		page, err = b.store.TurnTail(ctx, se.ID, *a.Cursor, limit)
	default:
		page, err = b.store.TurnTail(ctx, se.ID, -1, limit)
	}
	if err != nil {
		return MessagesResult{}, err
	}
	out := MessagesResult{SessionID: se.ID, AttemptID: se.AttemptID, Executor: se.Executor, Messages: convert(page.Turns, messageOf),
		Page: Page{HasMore: page.HasMore, NextCursor: page.NextCursor}}
	if n := len(page.Turns); n > 0 {
		last := page.Turns[n-1].Index
		out.Page.LastIndex = &last
	}
	return out, nil
}

// ContextResult answers get_context.
type ContextResult = tasks.ContextOut

// HasContext reports whether the board serves inside an attempt.
func (b *Board) HasContext() bool { return b.cfg.ContextAttemptID != "" }

// GetContext describes the attempt this server runs in.
func (b *Board) GetContext(ctx context.Context) (ContextResult, error) {
	if b.cfg.ContextAttemptID == "" {
		return ContextResult{}, abi.NewEnvelope(abi.CodeNotFound, "this server does not run inside an attempt",
			"use list_projects, list_tasks and list_task_attempts instead")
	}
	at, err := b.attempt(ctx, b.cfg.ContextAttemptID)
	if err != nil {
		return ContextResult{}, err
	}
	task, err := b.store.GetTask(ctx, at.TaskID)
	if err != nil {
		return ContextResult{}, err
	}
	project, err := b.store.GetProject(ctx, task.ProjectID)
	if err != nil {
		return ContextResult{}, err
	}
	repos, err := b.store.AttemptRepos(ctx, at.ID)
	if err != nil {
		return ContextResult{}, err
	}
	return ContextResult{ProjectID: project.ID, ProjectName: project.Name, TaskID: task.ID, TaskTitle: task.Title,
		TaskStatus: tasks.TaskStatus(task.Status), AttemptID: at.ID, WorkspaceBranch: at.Branch,
		WorkspaceRepos: convert(repos, attemptRepoOf)}, nil
}
