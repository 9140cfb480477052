package board

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/procsup"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Follow-up actions (tasks.Action values).
const (
	ActionSend   = tasks.ActionSend
	ActionQueue  = tasks.ActionQueue
	ActionCancel = tasks.ActionCancel
)

// FollowUpArgs are follow_up's arguments (without request_id, which stays
// with the host's idempotency).
type FollowUpArgs = tasks.FollowUpArgs

// FollowUpResult answers follow_up.
type FollowUpResult = tasks.FollowUpOut

// QueueStatus is a session's follow-up queue. ProcessRunning says whether
// a coding agent runs now; a queued message starts only when that run
// completes successfully.
type QueueStatus = tasks.QueueStatus

// FollowUp sends a prompt to a session (a new coding-agent run), queues
// one for when the running process completes, or cancels the queue.
func (b *Board) FollowUp(ctx context.Context, a FollowUpArgs) (FollowUpResult, error) {
	switch a.Action {
	case ActionSend, ActionQueue:
		if strings.TrimSpace(a.Prompt) == "" {
			return FollowUpResult{}, abi.NewEnvelope(abi.CodeMissingRequired, "prompt is required for action="+string(a.Action),
				"pass prompt with the message for the agent").WithDetail("field", "prompt")
		}
	case ActionCancel:
		if a.Prompt != "" {
			return FollowUpResult{}, invalid("prompt", "action=cancel takes no prompt",
				"drop prompt; cancel only clears the queued message (use stop_attempt to stop a running process)")
		}
	case "":
		return FollowUpResult{}, abi.NewEnvelope(abi.CodeMissingRequired, "action is required",
			"pass action: send | queue | cancel").WithDetail("field", "action")
	default:
		return FollowUpResult{}, invalid("action", fmt.Sprintf("action %q is not send, queue or cancel", a.Action),
			"pass action: send | queue | cancel; to stop a running process use stop_attempt")
	}
	se, err := b.resolveSession(ctx, a.SessionID, a.AttemptID, "follow_up")
	if err != nil {
		return FollowUpResult{}, err
	}
	if host := b.remoteAttempt(ctx, se.AttemptID); host != "" {
		var out FollowUpResult
		return out, b.forward(ctx, host, opFollowUp, a, &out)
	}
	out := FollowUpResult{Action: a.Action, AttemptID: se.AttemptID, SessionID: se.ID}
	switch a.Action {
	case ActionSend:
		p, err := b.send(ctx, se, a.Prompt, a.Variant)
		if err != nil {
			return FollowUpResult{}, err
		}
		out.ExecutionProcessID = &p.ID
	case ActionQueue:
		if a.Variant != "" {
			at, err := b.store.GetAttempt(ctx, se.AttemptID)
			if err != nil {
				return FollowUpResult{}, err
			}
			if _, _, err := b.resolveExecutor(at.Executor, a.Variant); err != nil {
				return FollowUpResult{}, err
			}
		}
		if _, err := b.store.QueueMessage(ctx, se.ID, a.Prompt, a.Variant); err != nil {
			return FollowUpResult{}, err
		}
	case ActionCancel:
		if _, err := b.store.TakeQueuedMessage(ctx, se.ID); err != nil {
			return FollowUpResult{}, err
		}
	}
	if out.Queue, err = b.queueStatus(ctx, se.ID); err != nil {
		return FollowUpResult{}, err
	}
	return out, nil
}

func (b *Board) queueStatus(ctx context.Context, sessionID string) (QueueStatus, error) {
	q, err := b.store.QueuedMessage(ctx, sessionID)
	if err != nil {
		return QueueStatus{}, err
	}
	_, running, err := b.store.RunningInSession(ctx, sessionID)
	if err != nil {
		return QueueStatus{}, err
	}
	st := QueueStatus{ProcessRunning: running}
	if q != nil {
		st.Queued, st.Prompt, st.QueuedAt = true, &q.Prompt, &q.CreatedAt
		if q.Variant != "" {
			st.Variant = &q.Variant
		}
	}
	return st, nil
}

// send starts a coding-agent run in a session, resuming the agent's own
// session when its CLI supports that.
func (b *Board) send(ctx context.Context, se store.Session, prompt, variant string) (store.Process, error) {
	if running, err := b.store.RunningProcesses(ctx, se.AttemptID); err != nil {
		return store.Process{}, err
	} else if len(running) > 0 {
		p := running[0]
		return store.Process{}, abi.NewEnvelope(abi.CodeProcessRunning,
			fmt.Sprintf("a %s process is still running in attempt %s", p.RunReason, se.AttemptID),
			"use follow_up action=queue to run this prompt after it completes, or stop_attempt to stop it first").
			WithDetail("execution_process_id", p.ID).WithDetail("session_id", se.ID)
	}
	at, err := b.store.GetAttempt(ctx, se.AttemptID)
	if err != nil {
		return store.Process{}, err
	}
	if variant == "" {
		variant = se.Variant
	}
	profile, variant, err := b.resolveExecutor(se.Executor, variant)
	if err != nil {
		return store.Process{}, err
	}
	task, err := b.store.GetTask(ctx, at.TaskID)
	if err != nil {
		return store.Process{}, err
	}
	repos, err := b.store.AttemptRepos(ctx, at.ID)
	if err != nil {
		return store.Process{}, err
	}
	if err := b.store.SetTaskStatus(ctx, task.ID, store.StatusInProgress); err != nil {
		return store.Process{}, err
	}
	c := &chain{b: b, attempt: at, repos: repos, profile: profile, variant: variant, prompt: prompt,
		env: b.processEnv(nil, task.ProjectID, task.ID, at.ID), agentEnv: b.processEnv(profile.Env, task.ProjectID, task.ID, at.ID)}
	p, err := c.agent(context.WithoutCancel(ctx), &se)
	if err != nil {
		b.settleTask(ctx, task.ID)
	}
	return p, err
}

// StopArgs are stop_attempt's arguments.
type StopArgs = tasks.StopIn

// StopResult answers stop_attempt.
type StopResult = tasks.StopOut

// StopAttempt stops the attempt's running processes (never a dev server):
// gracefully — interrupt the process group, wait the grace period, kill —
// or at once with force. A queued follow-up is discarded, the processes
// end killed, the task moves to inreview.
func (b *Board) StopAttempt(ctx context.Context, a StopArgs) (StopResult, error) {
	at, err := b.attempt(ctx, a.AttemptID)
	if err != nil {
		return StopResult{}, err
	}
	if host := b.remoteHost(ctx, at); host != "" {
		var out StopResult
		return out, b.forward(ctx, host, opStop, a, &out)
	}
	n, _ := b.store.DiscardQueuedForAttempt(ctx, at.ID)
	stopped, err := b.stopAttempt(ctx, at.ID, a.Force, false)
	if err != nil {
		return StopResult{}, err
	}
	b.settleTask(ctx, at.TaskID)
	status, err := b.GetAttemptStatus(ctx, AttemptArgs{AttemptID: at.ID})
	if err != nil {
		return StopResult{}, err
	}
	return StopResult{AttemptID: at.ID, Stopped: stopped, Force: a.Force, State: tasks.AttemptState(status.State), FailureSummary: status.FailureSummary,
		DiscardedQueuedFollowUp: n > 0, TaskStatus: status.TaskStatus, AlreadyFinished: len(stopped) == 0}, nil
}

// stopAttempt stops every running non-dev-server process of an attempt
// (every process when all is set) and waits until their ends are recorded.
func (b *Board) stopAttempt(ctx context.Context, attemptID string, force, all bool) ([]string, error) {
	b.mu.Lock()
	b.stops[attemptID]++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if b.stops[attemptID]--; b.stops[attemptID] == 0 {
			delete(b.stops, attemptID)
		}
		b.mu.Unlock()
	}()
	stopped := []string{}
	// A chain may start its next step while we stop the current one; loop
	// until nothing runs (the stops counter keeps new steps from starting).
	for round := 0; round < 5; round++ {
		procs, err := b.store.RunningProcesses(ctx, attemptID)
		if err != nil {
			return stopped, err
		}
		var targets []store.Process
		for _, p := range procs {
			if all || p.RunReason != store.ReasonDevServer {
				targets = append(targets, p)
			}
		}
		if len(targets) == 0 {
			break
		}
		done := make(chan struct{}, len(targets))
		for _, p := range targets {
			stopped = append(stopped, p.ID)
			go func() {
				b.stopProcess(ctx, p, force)
				done <- struct{}{}
			}()
		}
		for range targets {
			<-done
		}
	}
	return stopped, nil
}

// stopProcess stops one process and waits until its end is recorded. A
// process of another live host on the same data directory is interrupted
// through its process group and then its whole tree is killed (KillTree);
// that host records its end.
func (b *Board) stopProcess(ctx context.Context, p store.Process, force bool) {
	grace := b.cfg.StopGrace
	if force {
		grace = 0
	}
	b.mu.Lock()
	r := b.running[p.ID]
	b.mu.Unlock()
	if r != nil {
		r.proc.Stop(force, grace)
		<-r.recorded
		return
	}
	// Record the stop first: the owner's own record of the exit then
	// changes nothing (only running rows are updated), so the process ends
	// killed, as a stop must, and its chain does not go on.
	how := "graceful"
	if force {
		how = "force"
	}
	b.store.FinishProcess(ctx, p.ID, store.ProcKilled, nil, "stopped ("+how+")")
	if p.PID > 0 && !force {
		syscall.Kill(-p.PID, syscall.SIGINT)
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) && procsup.Alive(p.PID) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if p.PID > 0 {
		procsup.KillTree(p.PID, p.Identity)
	}
}
