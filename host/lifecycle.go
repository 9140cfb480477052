package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// lifecycle is the host's parts in the order they were opened, each with
// how it closes. Closing runs them in reverse, once: a part opened later
// may use an earlier one (calls use the board), never the other way round.
type lifecycle struct {
	mu     sync.Mutex
	parts  []part
	closed bool
}

type part struct {
	name  string
	close func(context.Context) error
}

// add registers a part that is now open.
func (l *lifecycle) add(name string, close func(context.Context) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts = append(l.parts, part{name, close})
}

// close closes every part, newest first, and returns their errors joined;
// a part that fails to close does not stop the others. Later calls do
// nothing.
func (l *lifecycle) close(ctx context.Context, log *slog.Logger) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	parts := l.parts
	l.mu.Unlock()
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		if err := parts[i].close(ctx); err != nil {
			log.Warn("close "+parts[i].name, "err", err)
			errs = append(errs, fmt.Errorf("close %s: %w", parts[i].name, err))
		}
	}
	return errors.Join(errs...)
}
