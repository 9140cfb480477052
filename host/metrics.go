package host

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/host/internal/metrics"
)

// Metrics endpoint: what an operator's Prometheus scrapes (Config.Metrics,
// ServeMetrics).
const (
	// MetricsPath is where ServeMetrics serves the metrics.
	MetricsPath = metrics.Path
	// MinMetricsTokenBytes is the shortest bearer token ServeMetrics
	// takes.
	MinMetricsTokenBytes = metrics.MinTokenBytes
)

// hostMetrics is the host's side of the metrics: the servers whose MCP
// sessions plugboard_sessions counts.
type hostMetrics struct {
	m *metrics.Metrics

	mu sync.Mutex
	// servers are held weakly: an embedder that builds servers and drops
	// them does not keep them alive through the metrics.
	servers []weak.Pointer[mcp.Server]
}

// openMetrics makes the host's metrics when Config.Metrics asks for them,
// and sets what is read at scrape time that the host owns: the MCP
// sessions of its servers and the attempts of its board once it is open.
func (h *Host) openMetrics() *metrics.Metrics {
	if !h.cfg.Metrics {
		return nil
	}
	hm := &hostMetrics{m: metrics.New()}
	h.metrics = hm
	hm.m.SetSessions(hm.sessions)
	hm.m.SetAttempts(func(ctx context.Context) (map[string]int, error) {
		b := h.board.opened()
		if b == nil {
			return nil, errors.New("no board")
		}
		return b.Store().AttemptStates(ctx)
	})
	return hm.m
}

// track counts srv's sessions in plugboard_sessions.
func (hm *hostMetrics) track(srv *mcp.Server) {
	if hm == nil {
		return
	}
	hm.mu.Lock()
	hm.servers = append(hm.servers, weak.Make(srv))
	hm.mu.Unlock()
}

// sessions counts the open sessions of the host's servers: a stdio client
// is one, each streamable HTTP session (the agent endpoint's too) one.
func (hm *hostMetrics) sessions() int {
	hm.mu.Lock()
	live := hm.servers[:0]
	var servers []*mcp.Server
	for _, w := range hm.servers {
		if srv := w.Value(); srv != nil {
			live = append(live, w)
			servers = append(servers, srv)
		}
	}
	clear(hm.servers[len(live):])
	hm.servers = live
	hm.mu.Unlock()
	n := 0
	for _, srv := range servers {
		for range srv.Sessions() {
			n++
		}
	}
	return n
}

// MetricsHandler is the metrics endpoint's handler: GET /metrics in
// Prometheus' text format for a request bearing token (at least
// MinMetricsTokenBytes), 401 with WWW-Authenticate for any other. It is
// nil when the host was opened without Config.Metrics. ServeMetrics serves
// it on a listener of its own; an embedder may mount it on its own
// server instead — never on the MCP listener's, which agents reach.
func (h *Host) MetricsHandler(token []byte) (http.Handler, error) {
	if h.metrics == nil {
		return nil, errors.New("host: metrics are off (Config.Metrics)")
	}
	if len(token) < MinMetricsTokenBytes {
		return nil, errors.New("host: the metrics token is shorter than MinMetricsTokenBytes")
	}
	return h.metrics.m.Handler(token), nil
}

// ReadMetricsToken reads the metrics endpoint's bearer token from file,
// surrounding whitespace ignored, refusing one shorter than
// MinMetricsTokenBytes.
func ReadMetricsToken(file string) ([]byte, error) { return metrics.ReadToken(file) }

// ServeMetrics serves the metrics (MetricsHandler) on ln, behind read,
// write and idle timeouts, until ctx ends. It needs Config.Metrics. The
// listener is the operator's alone: agents in attempts reach loopback
// too, so the token, not the address, keeps them out.
func (h *Host) ServeMetrics(ctx context.Context, ln net.Listener, token []byte) error {
	if _, err := h.MetricsHandler(token); err != nil {
		return err
	}
	srv := h.metrics.m.Server(token)
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = srv.Close()
		case <-done:
		}
	}()
	err := srv.Serve(ln)
	close(done)
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}
