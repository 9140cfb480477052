// Package boardapi exposes the task board to plugins: it serves the
// abi.FuncBoard host function, checking each operation's capability
// against the calling plugin's grants, decoding the operation's arguments
// strictly and answering with the board's JSON result or an envelope.
// The operations of abi.CapMail (mail, the agent's own status and task,
// log_decision) act for the caller in the call's context (host/internal/caller) and
// are refused without one; host/internal/mail and host/internal/audit do their work. Every
// operation reaches only the work the caller's scope holds (WithScopes,
// scope.go): a WORKER its own task or attempt.
//
// An operation with an effect made inside a keyed call (the context
// carries its idempotency.Scope) is journaled with its answer in the board
// store (store.RunEffect), so that the call run again gets the answer
// instead of making the effect twice.
//
// It owns the operation table (name → capability, argument type, board
// method). It must not hold state or workflow of its own: the board does
// the work, runtime delivers the bytes.
package boardapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/idempotency"
	"github.com/plugboard/plugboard/host/internal/mail"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// handler runs one operation on decoded arguments.
type handler func(ctx context.Context, a *API, args json.RawMessage) (any, error)

// op adapts a board method taking an argument struct.
func op[A, R any](method func(*board.Board, context.Context, A) (R, error)) handler {
	return func(ctx context.Context, api *API, raw json.RawMessage) (any, error) {
		var a A
		if err := decodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return method(api.board, ctx, a)
	}
}

// noArgs adapts a board method without arguments.
func noArgs[R any](method func(*board.Board, context.Context) (R, error)) handler {
	return func(ctx context.Context, api *API, raw json.RawMessage) (any, error) {
		var none struct{}
		if err := decodeArgs(raw, &none); err != nil {
			return nil, err
		}
		return method(api.board, ctx)
	}
}

// opRow is one board operation (ops).
type opRow struct {
	run    handler
	scope  scoping
	effect effect
}

// effect says whether an operation changes the board, and how its answer
// is journaled inside a keyed call (a tool call carrying its request_id):
// there each effect is journaled with its answer under the call's
// idempotency scope, and a rerun of the call — after a retryable failure,
// or after the host was killed — gets the answer back instead of making
// the effect again.
type effect int

const (
	// readOnly operations are not journaled.
	readOnly effect = iota
	// journaled operations journal their answer just after the effect.
	journaled
	// atomic operations make every store write through the journal's
	// transaction (store.conn), so the effect and its journal row commit
	// together.
	atomic
)

// ops is every board operation, one row each: the handler that runs it,
// how a caller with a limited scope reaches it (scope.go: check refuses a
// call before it runs, filter trims its answer; both nil when the
// operation names no one's work), and whether its effect is journaled.
// The capability an operation needs is the wire contract's
// (abi.BoardOpCapability). TestOpsAreTheABIs keeps the rows equal to
// abi.BoardOps, so an operation is served, scoped and journaled on
// purpose, never by omission.
var ops = map[string]opRow{
	// The executors are the host's configuration, not anyone's work.
	abi.OpListExecutors:      {run: noArgs((*board.Board).ListExecutors)},
	abi.OpListProjects:       {run: noArgs((*board.Board).ListProjects), scope: scoping{filter: filterProjects}},
	abi.OpListRepos:          {run: op((*board.Board).ListRepos), scope: scoping{check: checkProject}},
	abi.OpCreateTask:         {run: op((*board.Board).CreateTask), scope: scoping{check: checkProject}, effect: atomic},
	abi.OpListTasks:          {run: op((*board.Board).ListTasks), scope: scoping{filter: filterTasks}},
	abi.OpReviewQueue:        {run: op((*board.Board).ReviewQueue), scope: scoping{filter: filterReview}},
	abi.OpGetTask:            {run: op((*board.Board).GetTask), scope: scoping{check: checkTaskRecord}},
	abi.OpListTaskAttempts:   {run: op((*board.Board).ListTaskAttempts), scope: scoping{check: checkTaskRecord, filter: filterAttempts}},
	abi.OpUpdateTask:         {run: op((*board.Board).UpdateTask), scope: scoping{check: checkTask}, effect: journaled},
	abi.OpDeleteTask:         {run: op((*board.Board).DeleteTask), scope: scoping{check: checkTask}, effect: journaled},
	abi.OpStartTaskAttempt:   {run: op((*board.Board).StartTaskAttempt), scope: scoping{check: checkTask}, effect: journaled},
	abi.OpGetAttemptStatus:   {run: op((*board.Board).GetAttemptStatus), scope: scoping{check: checkAttempt}},
	abi.OpTailAttemptLogs:    {run: op((*board.Board).TailAttemptLogs), scope: scoping{check: checkAttempt}},
	abi.OpGetAttemptChanges:  {run: op((*board.Board).GetAttemptChanges), scope: scoping{check: checkAttempt}},
	abi.OpGetAttemptPatch:    {run: op((*board.Board).GetAttemptPatch), scope: scoping{check: checkAttempt}},
	abi.OpGetAttemptFile:     {run: op((*board.Board).GetAttemptFile), scope: scoping{check: checkAttempt}},
	abi.OpStopAttempt:        {run: op((*board.Board).StopAttempt), scope: scoping{check: checkAttempt}, effect: journaled},
	abi.OpApproveAttempt:     {run: op((*board.Board).ApproveAttempt), scope: scoping{check: checkAttempt}, effect: journaled},
	abi.OpRequestChanges:     {run: op((*board.Board).RequestChanges), scope: scoping{check: checkAttempt}, effect: journaled},
	abi.OpTailSessionMessage: {run: op((*board.Board).TailSessionMessages), scope: scoping{check: checkSessionOrAttempt}},
	abi.OpFollowUp:           {run: op((*board.Board).FollowUp), scope: scoping{check: checkSessionOrAttempt}, effect: journaled},
	abi.OpGetContext:         {run: getContext, scope: scoping{filter: filterContext}},
	// The operations acting for the caller reach only the caller's own:
	// its inbox, mail it received, its own status and task, its own
	// decision-log entries.
	abi.OpMailSend:       {run: asCaller(abi.OpMailSend, (*API).mailSend), effect: journaled},
	abi.OpMailListInbox:  {run: asCaller(abi.OpMailListInbox, (*API).mailListInbox)},
	abi.OpMailRead:       {run: asCaller(abi.OpMailRead, (*API).mailRead)},
	abi.OpMailReply:      {run: asCaller(abi.OpMailReply, (*API).mailReply), effect: journaled},
	abi.OpAgentGetStatus: {run: asCaller(abi.OpAgentGetStatus, (*API).agentGetStatus)},
	abi.OpAgentGetTask:   {run: asCaller(abi.OpAgentGetTask, (*API).agentGetTask)},
	abi.OpLogDecision:    {run: asCaller(abi.OpLogDecision, (*API).logDecision), effect: journaled},
}

// decodeArgs decodes strictly: an unknown field or a wrong type is an
// invalid_argument naming the field, so a plugin bug surfaces at once.
func decodeArgs(raw json.RawMessage, into any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		env := abi.NewEnvelope(abi.CodeInvalidArgument, "board arguments: "+err.Error(), "fix the named argument and retry")
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			env.WithDetail("field", typeErr.Field)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			env.WithDetail("field", strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
		}
		return env
	}
	return nil
}

// API serves board calls from plugins.
type API struct {
	board *board.Board
	log   *slog.Logger
	// mail and decisions serve the operations acting for the caller
	// (abi.CapMail); nil answers them unavailable.
	mail      *mail.Service
	decisions Decisions
	// scopes says what board work each caller reaches (WithScopes); nil
	// lets every caller reach everything.
	scopes func(*abi.Caller) policy.Scope
}

// Decisions records deliberate decision-log entries (host/internal/audit.Log).
type Decisions interface {
	Deliberate(ctx context.Context, c *abi.Caller, title, body string) (audit.Entry, error)
}

// Store is what the board API needs of the board's store: the effect
// journal of keyed calls, and the lookups that decide what a caller's
// scope reaches. host/internal/store (SQLite) implements it; the API
// reaches the board's through board.Board.Store.
type Store interface {
	// RunEffect returns the journaled answer of the effect k names
	// (replayed true), or runs fn and journals its answer; with atomic,
	// fn's store writes join the journal's transaction through the
	// context it is handed.
	RunEffect(ctx context.Context, k store.EffectKey, atomic bool, fn func(context.Context) ([]byte, error)) (result []byte, replayed bool, err error)
	// GetTask, GetAttempt and GetSession return one row, or
	// store.ErrNotFound.
	GetTask(ctx context.Context, id string) (store.Task, error)
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
}

var _ Store = (*store.Store)(nil)

// store is the board's store.
func (a *API) store() Store { return a.board.Store() }

// Option configures New.
type Option func(*API)

// WithMail serves the mail and agent operations through m (its agent
// directory answers agent_get_status and agent_get_task).
func WithMail(m *mail.Service) Option { return func(a *API) { a.mail = m } }

// WithDecisions serves log_decision through d.
func WithDecisions(d Decisions) Option { return func(a *API) { a.decisions = d } }

// New returns the API over b.
func New(b *board.Board, log *slog.Logger, opts ...Option) *API {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &API{board: b, log: log}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Ops lists the operations served, sorted.
func Ops() []string {
	out := make([]string, 0, len(ops))
	for name := range ops {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Handle serves one abi.BoardRequest. granted reports the calling plugin's
// grants. Every failure is an envelope; a failure that is not the
// caller's to fix is logged and reported as internal.
func (a *API) Handle(ctx context.Context, granted func(string) bool, req []byte) (json.RawMessage, *abi.Envelope) {
	var r struct {
		Op   string          `json:"op"`
		Args json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "board request is not a BoardRequest: "+err.Error(),
			`send {"op": NAME, "args": {...}}`)
	}
	capability, known := abi.BoardOpCapability(r.Op)
	row, served := ops[r.Op]
	if !known || !served {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("unknown board operation %q", r.Op),
			"use one of the operations in abi.BoardOps").WithDetail("ops", Ops())
	}
	// The host function's span names the operation (a known one only: the
	// plugin's string would make span names unbounded).
	tracing.BoardOp(ctx, r.Op)
	if !granted(capability) {
		return nil, abi.NewEnvelope(abi.CodePermissionDenied,
			fmt.Sprintf("board operation %s needs capability %q, which this plugin was not granted", r.Op, capability),
			"declare the capability in the plugin manifest (sdk.Require) and ask the operator to grant it").
			WithDetail("op", r.Op).WithDetail("capability", capability)
	}
	// The caller's scope first: a refused call must not reach the board,
	// nor the effect journal.
	h, err := a.scope(ctx, r.Op, r.Args, row)
	var out json.RawMessage
	if err == nil {
		out, err = a.run(ctx, r.Op, r.Args, h, row.effect)
	}
	if err != nil {
		var env *abi.Envelope
		if errors.As(err, &env) {
			return nil, env
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, abi.NewEnvelope(abi.CodeCancelled, "board "+r.Op+": "+err.Error(), "retry with more time")
		}
		if errors.Is(err, store.ErrUnavailable) {
			a.log.Warn("board operation failed: the store is unavailable", "op", r.Op, "err", err)
			return nil, abi.NewEnvelope(abi.CodeUnavailable, "board "+r.Op+": "+err.Error(), "retry later; the operator must fix the store as the message says")
		}
		a.log.Error("board operation failed", "op", r.Op, "err", err)
		return nil, abi.NewEnvelope(abi.CodeInternal, "board "+r.Op+": "+err.Error(), "retry; if it persists, check the host log")
	}
	return out, nil
}

// run runs one operation and encodes its answer, through the effect
// journal when ctx carries a keyed call's scope and the operation has an
// effect.
func (a *API) run(ctx context.Context, op string, args json.RawMessage, h handler, eff effect) (json.RawMessage, error) {
	call := func(ctx context.Context) ([]byte, error) {
		result, err := h(ctx, a, args)
		if err != nil {
			return nil, err
		}
		out, err := json.Marshal(result)
		if err != nil {
			return nil, fmt.Errorf("encode result: %w", err)
		}
		return out, nil
	}
	sc := idempotency.ScopeFrom(ctx)
	if eff == readOnly || sc == nil || a.board == nil {
		return call(ctx)
	}
	argsHash, seq := sc.Next(op, args)
	out, replayed, err := a.store().RunEffect(ctx, store.EffectKey{Tool: sc.Tool, RequestID: sc.RequestID,
		PayloadHash: sc.PayloadHash, Op: op, ArgsHash: argsHash, Seq: seq}, eff == atomic, call)
	if replayed {
		a.log.Debug("board operation replayed from the effect journal", "op", op, "tool", sc.Tool, "request_id", sc.RequestID)
	}
	return out, err
}
