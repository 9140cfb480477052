package board

import (
	"context"
	"strings"
	"time"

	"github.com/plugboard/plugboard/host/internal/board/executor"
	"github.com/plugboard/plugboard/host/internal/store"
)

// chain is the sequence of processes one run of an attempt goes through:
// each repo's setup script, then the coding agent, then — unless a queued
// follow-up takes over, or the agent was stopped — each repo's cleanup
// script. Every step starts from the previous one's exit.
type chain struct {
	b       *Board
	attempt store.Attempt
	repos   []store.AttemptRepo
	profile executor.Profile
	variant string
	prompt  string
	// env is the scripts' environment, agentEnv the agent's (with its
	// profile's variables).
	env      []string
	agentEnv []string
}

// background is the context of work that outlives the request that began
// it: a process started by a tool call runs after the call returns.
func background() context.Context { return context.Background() }

// setup starts the first setup script at or after repo index i, or the
// agent when none is left.
func (c *chain) setup(ctx context.Context, i int) (store.Process, error) {
	for ; i < len(c.repos); i++ {
		if c.repos[i].SetupScript != "" {
			break
		}
	}
	if i == len(c.repos) {
		return c.agent(ctx, nil)
	}
	next := i + 1
	return c.script(ctx, store.ReasonSetupScript, c.repos[i], func(p store.Process) {
		if p.Status != store.ProcCompleted || c.b.stopping(c.attempt.ID) {
			c.finished(background())
			return
		}
		if _, err := c.setup(background(), next); err != nil {
			c.b.log.Error("start next step after setup", "attempt_id", c.attempt.ID, "err", err)
			c.finished(background())
		}
	})
}

// cleanup starts the first cleanup script at or after repo index i, or
// settles the task when none is left.
func (c *chain) cleanup(ctx context.Context, i int) {
	for ; i < len(c.repos); i++ {
		if c.repos[i].CleanupScript != "" {
			break
		}
	}
	if i == len(c.repos) || c.b.stopping(c.attempt.ID) {
		c.finished(ctx)
		return
	}
	next := i + 1
	_, err := c.script(ctx, store.ReasonCleanupScript, c.repos[i], func(p store.Process) {
		if p.Status != store.ProcCompleted {
			c.finished(background())
			return
		}
		c.cleanup(background(), next)
	})
	if err != nil {
		c.b.log.Error("start cleanup script", "attempt_id", c.attempt.ID, "err", err)
		c.finished(ctx)
	}
}

func (c *chain) script(ctx context.Context, reason string, repo store.AttemptRepo, onExit func(store.Process)) (store.Process, error) {
	script := repo.SetupScript
	if reason == store.ReasonCleanupScript {
		script = repo.CleanupScript
	}
	return c.b.spawn(ctx, spawnSpec{
		attempt: c.attempt, reason: reason, dir: repo.WorktreeDir,
		argv: []string{"bash", "-c", script}, format: "lines", env: c.env, onExit: onExit, repos: c.repos,
	})
}

// agent starts the coding agent: in session when given (a follow-up),
// else in the attempt's latest session, created on the agent's first run.
func (c *chain) agent(ctx context.Context, session *store.Session) (store.Process, error) {
	if session == nil {
		se, err := c.b.store.LatestSession(ctx, c.attempt.ID)
		if err != nil {
			se, err = c.b.store.CreateSession(ctx, c.attempt.ID, c.profile.Executor, c.variant)
			if err != nil {
				return store.Process{}, err
			}
		}
		session = &se
	}
	return c.launch(ctx, *session, c.prompt)
}

// launch runs the agent in session with input as what it is told; the
// turn records c.prompt. A run that resumes the agent's own session and
// finds it missing is run again fresh (see freshRun).
func (c *chain) launch(ctx context.Context, sess store.Session, input string) (store.Process, error) {
	_, variant, err := c.profile.Variant(c.variant)
	if err != nil {
		return store.Process{}, err
	}
	argv, stdin := c.profile.Command(variant, input, sess.AgentSessionID)
	resumed := sess.AgentSessionID != "" && len(variant.Resume) > 0
	sessionID := sess.ID
	spec := spawnSpec{
		attempt: c.attempt, sessionID: &sessionID, reason: store.ReasonCodingAgent, dir: c.attempt.Dir,
		argv: argv, stdin: stdin, format: c.profile.OutputFormat, prompt: c.prompt, repos: c.repos, profile: &c.profile,
		env:        append(c.agentEnv, "PLUGBOARD_SESSION_ID="+sessionID),
		inactivity: durationOr(time.Duration(c.profile.InactivityTimeout), c.b.cfg.AgentInactivityTimeout),
		runTimeout: durationOr(time.Duration(c.profile.RunTimeout), c.b.cfg.AgentRunTimeout),
		onExit: func(p store.Process) {
			c.afterAgent(sess, p)
		},
	}
	if resumed {
		spec.resumeMissing = c.profile.ResumeMissing
		spec.onResumeMissing = func(p store.Process, record func() store.Process) { c.freshRun(sess, p, record) }
	}
	return c.b.spawn(ctx, spec)
}

func durationOr(d, fallback time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return fallback
}

// freshRun follows a resumed run that failed because the CLI has no such
// session (it never saved a turn): the agent session id is forgotten and
// the agent starts a new session told the conversation so far, so the
// follow-up is not lost. The failed run stays in the log as it happened;
// record records its end, once the fresh run exists (so the attempt never
// reads as failed in between) or once no fresh run will follow.
func (c *chain) freshRun(sess store.Session, failed store.Process, record func() store.Process) {
	ctx := background()
	if c.b.stopping(c.attempt.ID) {
		c.afterAgent(sess, record())
		return
	}
	c.b.log.Info("agent session to resume not found; starting a fresh run with the conversation so far",
		"session_id", sess.ID, "agent_session_id", sess.AgentSessionID, "execution_process_id", failed.ID)
	if err := c.b.store.SetAgentSessionID(ctx, sess.ID, ""); err != nil {
		c.b.log.Error("forget missing agent session", "session_id", sess.ID, "err", err)
	}
	input, err := c.conversation(ctx, sess.ID, failed.ID)
	if err == nil {
		fresh := sess
		fresh.AgentSessionID = ""
		if _, err = c.launch(ctx, fresh, input); err == nil {
			record()
			return
		}
	}
	c.b.log.Error("start fresh run after missing agent session", "session_id", sess.ID, "err", err)
	c.afterAgent(sess, record())
}

// maxConversationTurns bounds how much of a session's history a fresh run
// is told: the newest turns, which matter most to a follow-up.
const maxConversationTurns = 20

// conversation is the prompt of a fresh run that stands in for a resumed
// one: the session's earlier turns (prompt and the agent's final message),
// then this turn's prompt. failedID's turn is this turn.
func (c *chain) conversation(ctx context.Context, sessionID, failedID string) (string, error) {
	page, err := c.b.store.TurnTail(ctx, sessionID, -1, maxConversationTurns+1)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.WriteString("Your previous session could not be resumed, so here is the conversation so far.\n")
	for _, t := range page.Turns {
		if t.ProcessID != nil && *t.ProcessID == failedID {
			continue
		}
		sb.WriteString("\n## User\n\n" + t.Prompt + "\n")
		if t.Summary != nil && *t.Summary != "" {
			sb.WriteString("\n## You\n\n" + *t.Summary + "\n")
		}
	}
	sb.WriteString("\n## User (now)\n\n" + c.prompt + "\n")
	return sb.String(), nil
}

// afterAgent applies the follow-up queue rule: after a successful run the
// queued message starts the next run; after a failure or a kill it is
// discarded. Without a next run, cleanup scripts follow unless the agent
// was stopped.
func (c *chain) afterAgent(session store.Session, p store.Process) {
	ctx := background()
	if p.Status == store.ProcCompleted && !c.b.stopping(c.attempt.ID) {
		q, err := c.b.store.TakeQueuedMessage(ctx, session.ID)
		if err != nil {
			c.b.log.Error("take queued follow-up", "session_id", session.ID, "err", err)
		}
		if q != nil {
			se, err := c.b.store.GetSession(ctx, session.ID) // re-read: the agent may have reported its session id
			if err == nil {
				next := *c
				next.prompt = q.Prompt
				if q.Variant != "" {
					next.variant = q.Variant
				}
				if _, err := next.agent(ctx, &se); err == nil {
					c.b.log.Info("queued follow-up started", "session_id", session.ID)
					return
				} else {
					c.b.log.Error("start queued follow-up", "session_id", session.ID, "err", err)
				}
			}
		}
	} else if n, _ := c.b.store.DiscardQueuedForAttempt(ctx, c.attempt.ID); n > 0 {
		c.b.log.Info("queued follow-up discarded", "session_id", session.ID, "process_status", p.Status)
	}
	if p.Status == store.ProcKilled {
		c.finished(ctx)
		return
	}
	c.cleanup(ctx, 0)
}

// finished ends the chain: the attempt's run is over (completed, failed or
// stopped), which is recorded as an attempt.finished event, and its task
// settles.
func (c *chain) finished(ctx context.Context) {
	c.b.attemptFinished(ctx, c.attempt)
	c.b.settleTask(ctx, c.attempt.TaskID)
}

// attemptFinished records the attempt.finished event with the attempt's
// state as it ended.
func (b *Board) attemptFinished(ctx context.Context, a store.Attempt) {
	data := map[string]any{"task_id": a.TaskID}
	if p, err := b.latestProcess(ctx, a.ID); err == nil {
		state, summary := deriveState(p)
		data["state"] = state
		if summary != nil {
			data["failure_summary"] = *summary
		}
	}
	if err := b.store.RecordEvent(ctx, store.EventAttemptFinished, a.ID, data); err != nil {
		b.log.Warn("record attempt.finished", "attempt_id", a.ID, "err", err)
	}
}

// settleTask moves a task from inprogress to inreview once none of its
// attempts has a process running: its agent finished or was stopped.
func (b *Board) settleTask(ctx context.Context, taskID string) {
	task, err := b.store.GetTask(ctx, taskID)
	if err != nil || task.Status != store.StatusInProgress {
		return
	}
	sum, err := b.store.TaskSummary(ctx, taskID)
	if err != nil || sum.HasInProgressAttempt {
		return
	}
	if err := b.store.SetTaskStatus(ctx, taskID, store.StatusInReview); err != nil {
		b.log.Error("move task to inreview", "task_id", taskID, "err", err)
	}
}

// stopping reports whether a stop of the attempt is under way, so a chain
// does not start its next step behind the stop's back.
func (b *Board) stopping(attemptID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stops[attemptID] > 0
}
