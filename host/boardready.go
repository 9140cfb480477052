package host

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/boardapi"
	"github.com/plugboard/plugboard/host/internal/idempotency"
	"github.com/plugboard/plugboard/host/internal/store"
)

// boardReady is the task board as it opens in the background. wait is the
// one way to reach it: every user (the board host function, request_id
// records, the decision log, mail) waits for the same opening and gets the
// same error if it failed.
type boardReady struct {
	ready   chan struct{}
	started bool
	b       *board.Board
	api     *boardapi.API
	err     error
}

// start opens the board in the background; api makes the board API over
// it once it is open.
func (r *boardReady) start(ctx context.Context, cfg board.Config, log *slog.Logger, api func(*board.Board) *boardapi.API) {
	r.started = true
	go func() {
		defer close(r.ready)
		r.b, r.err = board.Open(ctx, cfg)
		if r.err != nil {
			log.Error("task board unavailable; board operations will fail", "data", cfg.DataDir, "err", r.err)
			return
		}
		r.api = api(r.b)
	}()
}

// wait returns the board once it has opened, or why it could not.
func (r *boardReady) wait(ctx context.Context) (*board.Board, error) {
	if !r.started {
		return nil, fmt.Errorf("the task board was not opened")
	}
	select {
	case <-r.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, fmt.Errorf("the task board could not be opened: %w", r.err)
	}
	return r.b, nil
}

// opened returns the board if it has opened, without waiting.
func (r *boardReady) opened() *board.Board {
	if !r.started {
		return nil
	}
	select {
	case <-r.ready:
		return r.b
	default:
		return nil
	}
}

// handle serves the board host function once the board is open.
func (r *boardReady) handle(ctx context.Context, granted func(string) bool, req []byte) (json.RawMessage, *abi.Envelope) {
	if _, err := r.wait(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, abi.NewEnvelope(abi.CodeCancelled, "the call ended while the task board was opening", "retry the call")
		}
		return nil, abi.NewEnvelope(abi.CodeUnavailable, err.Error(), "the operator must fix the data directory (see the server log)")
	}
	return r.api.Handle(ctx, granted, req)
}

// idempotencyStore is the board's store for request_id records (an
// idempotency.StoreFunc).
func (r *boardReady) idempotencyStore(ctx context.Context) (idempotency.Store, error) {
	b, err := r.wait(ctx)
	if err != nil {
		return nil, err
	}
	return b.Store(), nil
}

// store is the board's store (the decision log's and the mail system's
// StoreFunc).
func (r *boardReady) store(ctx context.Context) (*store.Store, error) {
	b, err := r.wait(ctx)
	if err != nil {
		return nil, err
	}
	return b.Store(), nil
}

// close waits for the board to finish opening, then closes it: its agents
// stop (they do not outlive the host that records them) and its store
// closes.
func (r *boardReady) close() error {
	if !r.started {
		return nil
	}
	<-r.ready
	if r.b == nil {
		return nil
	}
	return r.b.Close()
}
