package idempotency

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi"
)

// Environment variables setting the record TTLs, in whole seconds; 0
// disables that kind of expiry.
const (
	EnvCompletedTTL  = "PLUGBOARD_IDEMPOTENCY_COMPLETED_TTL_SECS"
	EnvInProgressTTL = "PLUGBOARD_IDEMPOTENCY_IN_PROGRESS_TTL_SECS"
)

// Default TTLs: a retry is safe for a week; an unfinished claim is presumed
// dead after an hour (far beyond any call's deadline).
const (
	DefaultCompletedTTL  = 7 * 24 * time.Hour
	DefaultInProgressTTL = time.Hour
)

// Config is the retention of idempotency records.
type Config struct {
	// CompletedTTL is how long a completed call's result is kept for
	// replays; 0 keeps it forever.
	CompletedTTL time.Duration
	// InProgressTTL is how long an unfinished claim blocks its key; after
	// it the claim is presumed dead (the host crashed mid-call), a new call
	// may claim the key and the pruner deletes it. 0 never expires one.
	// A claim whose owner is known dead does not wait for it (OwnerDead).
	InProgressTTL time.Duration
	Logger        *slog.Logger
	// Owner names this process in its claims; "" is ProcessOwner().
	Owner string
	// Dead reports whether a claim's owner is gone; nil is OwnerDead.
	Dead func(owner string) bool
	// ScopeOf names the board work a caller may reach (a fingerprint of
	// its scope, "" when every caller reaches everything). It is part of
	// the caller's identity in a key's record, so an answer is replayed
	// only to a caller whose scope is the one the board checked when it
	// made the answer: one whose agents-file scope changed since gets
	// idempotency_conflict, as another caller would.
	ScopeOf func(*abi.Caller) string
}

func (c Config) owner() string {
	if c.Owner != "" {
		return c.Owner
	}
	return ProcessOwner()
}

func (c Config) ownerDead() func(string) bool {
	if c.Dead != nil {
		return c.Dead
	}
	return OwnerDead
}

// ConfigFromEnv reads the TTLs from EnvCompletedTTL and EnvInProgressTTL
// through getenv (os.Getenv), with the defaults for unset or empty
// variables. A value that is not a whole number of seconds, 0 or more, is an
// error naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	return ApplyEnv(Config{CompletedTTL: DefaultCompletedTTL, InProgressTTL: DefaultInProgressTTL}, getenv)
}

// ApplyEnv returns cfg with the TTLs EnvCompletedTTL and EnvInProgressTTL
// set through getenv (os.Getenv), which win over cfg's: a configuration
// file gives cfg, the environment overrides it. Unset or empty variables
// leave cfg's value; a value that is not a whole number of seconds, 0 or
// more, is an error naming the variable.
func ApplyEnv(cfg Config, getenv func(string) string) (Config, error) {
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{EnvCompletedTTL, &cfg.CompletedTTL}, {EnvInProgressTTL, &cfg.InProgressTTL}} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/int64(time.Second) {
			return Config{}, fmt.Errorf("%s=%q: want a whole number of seconds, 0 or more (0 disables expiry)", v.name, s)
		}
		*v.dst = time.Duration(n) * time.Second
	}
	return cfg, nil
}

// Pruner deletes expired idempotency records.
type Pruner struct {
	store StoreFunc
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
}

// NewPruner returns a pruner of the store that store returns.
func NewPruner(store StoreFunc, cfg Config) *Pruner {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pruner{store: store, cfg: cfg, log: log, now: time.Now}
}

// Interval is how often Run prunes: a tenth of the shorter non-zero TTL,
// clamped to [1 min, 10 min]; 0 when both TTLs are 0 (nothing to prune).
func (p *Pruner) Interval() time.Duration {
	ttl := time.Duration(0)
	for _, t := range []time.Duration{p.cfg.CompletedTTL, p.cfg.InProgressTTL} {
		if t > 0 && (ttl == 0 || t < ttl) {
			ttl = t
		}
	}
	if ttl == 0 {
		return 0
	}
	return min(max(ttl/10, time.Minute), 10*time.Minute)
}

// Prune releases the claims of dead owners and deletes the expired records
// once, and returns how many records it deleted.
func (p *Pruner) Prune(ctx context.Context) (int64, error) {
	st, err := p.store(ctx)
	if err != nil {
		return 0, err
	}
	released, err := st.ReleaseDeadClaims(ctx, p.cfg.ownerDead())
	if err != nil {
		return released, err
	}
	if released > 0 {
		p.log.Info("released the request_id claims of calls whose host is gone", "claims", released)
	}
	n, err := st.PruneRequests(ctx, p.now(), p.cfg.CompletedTTL, p.cfg.InProgressTTL)
	return released + n, err
}

// Run prunes once at once, waiting for the store if it is still opening —
// which is how a restarted host releases the claims its killed
// predecessor left — then every Interval until ctx ends (not again when
// both TTLs are 0). It returns when the store cannot be opened. Failures
// are logged; the next round tries again.
func (p *Pruner) Run(ctx context.Context) {
	if _, err := p.store(ctx); err != nil {
		if ctx.Err() == nil {
			p.log.Warn("idempotency records are not pruned: no store", "err", err)
		}
		return
	}
	every := p.Interval()
	if every == 0 {
		if _, err := p.Prune(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("pruning idempotency records failed", "err", err)
		}
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := p.Prune(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			p.log.Warn("pruning idempotency records failed", "err", err)
		case n > 0:
			p.log.Debug("pruned idempotency records", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
