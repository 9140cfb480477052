package host

import (
	"encoding/json"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/grants"
	"github.com/plugboard/plugboard/host/internal/idempotency"
	"github.com/plugboard/plugboard/host/internal/policy"
)

// The parts of Config whose packages are internal, named here for programs
// outside this module. They stay aliases because they are configuration a
// caller fills in and the host hands on as it is (a Policy and Grants also
// carry their packages' methods); what each means is its package's.
type (
	// Policy is an agents configuration: identities, roles, tokens and
	// scopes (LoadAgents, or the configuration file's agents section).
	Policy = policy.Policy
	// Grants narrows the capabilities each plugin receives (LoadGrants,
	// or the configuration file's grants section).
	Grants = grants.Policy
	// AttemptLogLimits bound attempt processes' logs: what each process
	// and attempt keeps, and their retention (BoardConfig.Logs).
	AttemptLogLimits = board.LogLimits
)

// IdempotencyConfig is how long request_id records are kept
// (Config.Idempotency). An alias of host/config's type, which is public:
// config.Config.IdempotencyConfig returns it.
type IdempotencyConfig = config.IdempotencyRetention

// AuditOptions bounds the decision log (DefaultAuditOptions). It is this
// package's type, converted to the decision log's when the host opens.
type AuditOptions struct {
	// PayloadMax is the longest input, result or error stored as it is, in
	// bytes; a longer one is stored capped.
	PayloadMax int
	// MaxAge is how long a row is kept.
	MaxAge time.Duration
	// MaxBytes is the budget of the whole log; the oldest rows beyond it
	// are pruned.
	MaxBytes int64
	// PruneEvery is how often rows are pruned (0: the default).
	PruneEvery time.Duration
}

// Result is one call's answer (Host.Call): on success Structured holds the
// tool's structured answer (possibly nil) and Content at least one item;
// on failure Envelope is set, Structured holds its JSON and Content its
// compact text. It is this package's type, not the pipeline's, so the
// pipeline's result may grow without changing what callers see.
type Result struct {
	Content    []abi.Content
	Structured json.RawMessage
	Envelope   *abi.Envelope
}

// IsError reports whether the result is an envelope.
func (r *Result) IsError() bool { return r.Envelope != nil }

// resultOf is the pipeline's result as callers see it: the same fields,
// so the conversion stops compiling when the pipeline's result changes.
func resultOf(r *dispatch.Result) *Result { return (*Result)(r) }

// Identities and limits of the agents configuration.
const (
	// LocalID is the identity of the local operator: sessions no
	// transport authenticated, and the --http-token's holder.
	LocalID = policy.LocalID
	// MinTokenLength is the shortest bearer token accepted.
	MinTokenLength = policy.MinTokenLength
)

// Decision log bounds of DefaultAuditOptions.
const (
	DefaultAuditPayloadMax = audit.DefaultPayloadMax
	DefaultAuditMaxAge     = audit.DefaultMaxAge
	DefaultAuditMaxBytes   = audit.DefaultMaxBytes
)

// Attempt log bounds of DefaultAttemptLogLimits.
const (
	DefaultAttemptLogProcessMax = board.DefaultLogProcessMax
	DefaultAttemptLogAttemptMax = board.DefaultLogAttemptMax
	DefaultAttemptLogMaxAge     = board.DefaultLogMaxAge
	DefaultAttemptLogMaxBytes   = board.DefaultLogMaxBytes
)

// DefaultAttemptLogLimits are the attempt logs' default bounds (a
// BoardConfig without Logs).
func DefaultAttemptLogLimits() AttemptLogLimits { return board.DefaultLogLimits() }

// LoadAgents reads an agents file ("" : no agents, every caller the local
// SUPERVISOR).
func LoadAgents(path string) (*Policy, error) { return policy.Load(path) }

// DefaultAgents is the agents configuration without an agents file: the
// built-in rules of each role (SUPERVISOR, ORCHESTRATOR, WORKER).
func DefaultAgents() *Policy { return policy.Default() }

// LoadGrants reads a grants file ("": each plugin gets what it declares).
func LoadGrants(path string) (*Grants, error) { return grants.Load(path) }

// DefaultAuditOptions are the decision log's default bounds.
func DefaultAuditOptions() AuditOptions { return AuditOptions(audit.DefaultOptions()) }

// IdempotencyFromEnv is the request_id retention the
// PLUGBOARD_IDEMPOTENCY_* variables give (getenv: os.Getenv, or a stand-in).
func IdempotencyFromEnv(getenv func(string) string) (IdempotencyConfig, error) {
	c, err := idempotency.ConfigFromEnv(getenv)
	return IdempotencyConfig{CompletedTTL: c.CompletedTTL, InProgressTTL: c.InProgressTTL}, err
}
