package host

import (
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/grants"
	"github.com/plugboard/plugboard/host/internal/idempotency"
	"github.com/plugboard/plugboard/host/internal/policy"
)

// The parts of Config and of a call's answer whose packages are internal,
// named here for programs outside this module. What each means is its
// package's: the names below only make them reachable.
type (
	// Policy is an agents configuration: identities, roles, tokens and
	// scopes (LoadAgents, or the configuration file's agents section).
	Policy = policy.Policy
	// Grants narrows the capabilities each plugin receives (LoadGrants,
	// or the configuration file's grants section).
	Grants = grants.Policy
	// AuditOptions bounds the decision log (DefaultAuditOptions).
	AuditOptions = audit.Options
	// AttemptLogLimits bound attempt processes' logs: what each process
	// and attempt keeps, and their retention (BoardConfig.Logs).
	AttemptLogLimits = board.LogLimits
	// IdempotencyConfig is how long request_id records are kept.
	IdempotencyConfig = idempotency.Config
	// Result is one call's answer: content, structured output, or an
	// error envelope.
	Result = dispatch.Result
)

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
func DefaultAuditOptions() AuditOptions { return audit.DefaultOptions() }

// IdempotencyFromEnv is the request_id retention the
// PLUGBOARD_IDEMPOTENCY_* variables give (getenv: os.Getenv, or a stand-in).
func IdempotencyFromEnv(getenv func(string) string) (IdempotencyConfig, error) {
	return idempotency.ConfigFromEnv(getenv)
}
