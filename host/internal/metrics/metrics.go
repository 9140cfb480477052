// Package metrics owns the host's Prometheus metrics: their names, labels
// and bounds, the registry they live in (the host's own, never the
// process-wide default, with the Go and process collectors), the values
// read at scrape time (plugin pools, attempts by state, MCP sessions) and
// the operator's /metrics handler behind its bearer token.
//
// The other packages record through a *Metrics they are given; a nil
// *Metrics records nothing, so a host without metrics pays one nil check
// per point. Labels are bounded: tool and plugin names (what is served),
// envelope codes (abi's registered codes, anything else "other"), egress
// host names (at most MaxHosts distinct, then "other"), fixed operation
// names — never an id of a task, attempt, session, request or caller.
package metrics

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plugboard/plugboard/abi"
)

// Label values with a meaning of their own.
const (
	// OutcomeOK is the outcome of a call, command or request that succeeded.
	OutcomeOK = "ok"
	// Other stands for a value beyond a label's bound: an envelope code
	// abi does not register, an egress host past MaxHosts.
	Other = "other"
	// UnknownTool is the tool label of calls naming no served tool: the
	// name a caller sends is unbounded, so it is not a label.
	UnknownTool = "(unknown)"
)

// MaxHosts bounds the egress host label: the first MaxHosts distinct host
// names keep theirs, later ones are counted as Other. Plugins reach only
// their allowlists' hosts, but a denied request names any host the plugin
// (or its input) chose.
const MaxHosts = 100

// AttemptsTimeout bounds the store query behind plugboard_attempts at
// each scrape: a slow store leaves the gauge out of that scrape rather
// than hold it up.
const AttemptsTimeout = 2 * time.Second

// Metrics is one host's metrics and their registry. Its methods are safe
// for concurrent use, and do nothing on a nil *Metrics.
type Metrics struct {
	reg *prometheus.Registry

	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	loads        *prometheus.CounterVec
	compiles     *prometheus.CounterVec
	compileTime  *prometheus.HistogramVec
	unloads      *prometheus.CounterVec
	egress       *prometheus.CounterVec
	storeTime    *prometheus.HistogramVec
	forwardTime  *prometheus.HistogramVec

	hostsMu sync.Mutex
	hosts   map[string]bool

	// The sources read at scrape time (SetPools, SetAttempts,
	// SetSessions); nil ones are left out.
	pools    atomic.Pointer[func() []Pool]
	attempts atomic.Pointer[func(context.Context) (map[string]int, error)]
	sessions atomic.Pointer[func() int]
}

// Pool is one compiled plugin's instances at a scrape.
type Pool struct {
	Plugin string
	// Idle instances wait in the pool; Busy ones run a call (or start).
	Idle, Busy int
}

// Buckets of the duration histograms, in seconds. A call spans from a
// sub-millisecond echo to the 5-minute deadline cap; a compilation from a
// cache load (≈ 50 ms) to a first compilation (seconds); a store
// operation from microseconds (SQLite) to a slow PostgreSQL transaction.
var (
	callBuckets    = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	compileBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	storeBuckets   = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
)

// New returns metrics in a registry of their own, with the Go runtime's
// and the process's collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), hosts: map[string]bool{}}
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plugboard_tool_calls_total",
		Help: `Tool calls through the dispatcher, by tool, plugin and outcome ("ok" or the envelope's code; "other" for a code abi does not register).`,
	}, []string{"tool", "plugin", "outcome"})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "plugboard_tool_call_duration_seconds",
		Help:    "Duration of tool calls from the policy check to the result (the decision log's duration), by tool and plugin.",
		Buckets: callBuckets,
	}, []string{"tool", "plugin"})
	m.loads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plugboard_plugin_loads_total",
		Help: `Plugin files loaded (manifest read) at start-up and on reloads, by plugin and result ("ok" or "error"; a file that fails is named by its file name).`,
	}, []string{"plugin", "result"})
	m.compiles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plugboard_plugin_compiles_total",
		Help: `Plugin compilations by the engine, by plugin, cache ("hit": machine code from the disk cache, "miss", "off": no disk cache) and result ("ok" or "error").`,
	}, []string{"plugin", "cache", "result"})
	m.compileTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "plugboard_plugin_compile_duration_seconds",
		Help:    "Duration of plugin compilations (instrumentation and compilation or cache load), by plugin and cache.",
		Buckets: compileBuckets,
	}, []string{"plugin", "cache"})
	m.unloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plugboard_plugin_unloads_total",
		Help: "Plugins retired by a reload (file removed or changed, settings changed), by plugin.",
	}, []string{"plugin"})
	m.egress = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plugboard_egress_requests_total",
		Help: `Plugins' HTTP requests through the host's egress, by host name (at most 100 distinct, then "other") and outcome ("denied", "error", or the status class "2xx"…"5xx").`,
	}, []string{"host", "outcome"})
	m.storeTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "plugboard_store_operation_duration_seconds",
		Help:    `Duration of the board store's operations, by kind ("exec", "query": until the first row, "tx": a whole write transaction, retries included).`,
		Buckets: storeBuckets,
	}, []string{"op"})
	m.forwardTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "plugboard_forwarded_command_duration_seconds",
		Help:    `Duration of board commands forwarded to the host holding an attempt's worktree (through the shared store), by operation and outcome ("ok", an envelope code, or "error").`,
		Buckets: callBuckets,
	}, []string{"op", "outcome"})
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.toolCalls, m.toolDuration, m.loads, m.compiles, m.compileTime, m.unloads, m.egress, m.storeTime, m.forwardTime,
		scraped{m},
	)
	return m
}

// Registry is the registry the metrics are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Outcome is the outcome label of an envelope code: "ok" for "", the code
// when abi registers it, else Other.
func Outcome(code string) string {
	if code == "" {
		return OutcomeOK
	}
	if _, ok := codeIndex[code]; ok {
		return code
	}
	return Other
}

// codeIndex numbers abi's registered codes, for Tool's counters.
var codeIndex = func() map[string]int {
	idx := map[string]int{}
	for i, c := range abi.Codes() {
		idx[c.Code] = i
	}
	return idx
}()

// Tool records the calls of one served tool: its label values resolved
// once, so a call's recording allocates nothing.
type Tool struct {
	m            *Metrics
	tool, plugin string
	ok           prometheus.Counter
	duration     prometheus.Observer
	// failed holds the counter of each registered code (Other last),
	// made on the code's first failure so unseen codes add no series.
	failed []atomic.Pointer[prometheus.Counter]
}

// Tool returns the recorder of calls to tool, served by plugin; nil on a
// nil *Metrics.
func (m *Metrics) Tool(tool, plugin string) *Tool {
	if m == nil {
		return nil
	}
	return &Tool{m: m, tool: tool, plugin: plugin,
		ok:       m.toolCalls.WithLabelValues(tool, plugin, OutcomeOK),
		duration: m.toolDuration.WithLabelValues(tool, plugin),
		failed:   make([]atomic.Pointer[prometheus.Counter], len(codeIndex)+1),
	}
}

// Done records one call that took d and ended with the envelope code
// ("" for success).
func (t *Tool) Done(code string, d time.Duration) {
	if t == nil {
		return
	}
	t.duration.Observe(d.Seconds())
	if code == "" {
		t.ok.Inc()
		return
	}
	i, ok := codeIndex[code]
	if !ok {
		i, code = len(t.failed)-1, Other
	}
	c := t.failed[i].Load()
	if c == nil {
		n := t.m.toolCalls.WithLabelValues(t.tool, t.plugin, code)
		t.failed[i].CompareAndSwap(nil, &n)
		c = t.failed[i].Load()
	}
	(*c).Inc()
}

// UnknownTool records a call naming no served tool (tool_not_found).
func (m *Metrics) UnknownTool() {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(UnknownTool, "", abi.CodeToolNotFound).Inc()
}

// Loaded records the load of a plugin file: plugin is its name, or its
// file name when it failed before naming itself.
func (m *Metrics) Loaded(plugin string, err error) {
	if m == nil {
		return
	}
	m.loads.WithLabelValues(plugin, result(err)).Inc()
}

// Unloaded records a plugin a reload retired.
func (m *Metrics) Unloaded(plugin string) {
	if m == nil {
		return
	}
	m.unloads.WithLabelValues(plugin).Inc()
}

// Cache says where a compilation's machine code came from.
type Cache string

// Cache values.
const (
	CacheHit  Cache = "hit"
	CacheMiss Cache = "miss"
	CacheOff  Cache = "off"
)

// Compiled records one compilation of plugin that took d.
func (m *Metrics) Compiled(plugin string, cache Cache, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.compiles.WithLabelValues(plugin, string(cache), result(err)).Inc()
	m.compileTime.WithLabelValues(plugin, string(cache)).Observe(d.Seconds())
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return OutcomeOK
}

// Egress outcomes besides the status classes.
const (
	EgressDenied = "denied"
	EgressError  = "error"
)

// Egress records one HTTP request of a plugin to host (a host name, no
// port): denied by the egress policy, failed (error) or answered with
// status.
func (m *Metrics) Egress(host string, denied bool, failed bool, status int) {
	if m == nil {
		return
	}
	outcome := EgressError
	switch {
	case denied:
		outcome = EgressDenied
	case !failed && status >= 100 && status < 600:
		outcome = strconv.Itoa(status/100) + "xx"
	}
	m.egress.WithLabelValues(m.hostLabel(host), outcome).Inc()
}

// hostLabel bounds the host label (MaxHosts).
func (m *Metrics) hostLabel(host string) string {
	if host == "" {
		return Other
	}
	m.hostsMu.Lock()
	defer m.hostsMu.Unlock()
	if m.hosts[host] {
		return host
	}
	if len(m.hosts) >= MaxHosts {
		return Other
	}
	m.hosts[host] = true
	return host
}

// StoreOp is a kind of store operation.
type StoreOp int

// The store operation kinds.
const (
	StoreExec StoreOp = iota
	StoreQuery
	StoreTx
	storeOps
)

var storeOpNames = [storeOps]string{"exec", "query", "tx"}

// Store records a store's operations, its label values resolved once.
type Store struct {
	ops [storeOps]prometheus.Observer
}

// Store returns the recorder of the board store's operations; nil on a
// nil *Metrics.
func (m *Metrics) Store() *Store {
	if m == nil {
		return nil
	}
	s := &Store{}
	for i, name := range storeOpNames {
		s.ops[i] = m.storeTime.WithLabelValues(name)
	}
	return s
}

// Observe records one operation of kind op that took d.
func (s *Store) Observe(op StoreOp, d time.Duration) {
	if s == nil || op < 0 || op >= storeOps {
		return
	}
	s.ops[op].Observe(d.Seconds())
}

// Forwarded records one command forwarded to another host: op is the
// board operation (a fixed set), err what it ended with.
func (m *Metrics) Forwarded(op string, err error, d time.Duration) {
	if m == nil {
		return
	}
	outcome := OutcomeOK
	if err != nil {
		outcome = "error"
		var env *abi.Envelope
		if errors.As(err, &env) {
			outcome = Outcome(env.Code)
		}
	}
	m.forwardTime.WithLabelValues(op, outcome).Observe(d.Seconds())
}

// SetPools sets what plugboard_plugin_instances reads at each scrape.
func (m *Metrics) SetPools(fn func() []Pool) {
	if m != nil {
		m.pools.Store(&fn)
	}
}

// SetAttempts sets what plugboard_attempts reads at each scrape: the
// number of attempts in each state. It is called under AttemptsTimeout;
// an error (no board yet, a slow store) leaves the gauge out.
func (m *Metrics) SetAttempts(fn func(context.Context) (map[string]int, error)) {
	if m != nil {
		m.attempts.Store(&fn)
	}
}

// SetSessions sets what plugboard_sessions reads at each scrape.
func (m *Metrics) SetSessions(fn func() int) {
	if m != nil {
		m.sessions.Store(&fn)
	}
}

// scraped is the collector of the values read at scrape time.
type scraped struct{ m *Metrics }

var (
	instancesDesc = prometheus.NewDesc("plugboard_plugin_instances",
		`Instances of each compiled plugin, by state ("idle": in its pool, "busy": running a call).`, []string{"plugin", "state"}, nil)
	attemptsDesc = prometheus.NewDesc("plugboard_attempts",
		"Attempts on the board by state (idle, running, completed, failed), read from the store at each scrape.", []string{"state"}, nil)
	sessionsDesc = prometheus.NewDesc("plugboard_sessions",
		"MCP sessions open (streamable HTTP sessions, the agent endpoint's, and a stdio client as one).", nil, nil)
)

func (s scraped) Describe(ch chan<- *prometheus.Desc) {
	ch <- instancesDesc
	ch <- attemptsDesc
	ch <- sessionsDesc
}

func (s scraped) Collect(ch chan<- prometheus.Metric) {
	if fn := s.m.pools.Load(); fn != nil {
		// One series per plugin name even if a source lists a name twice
		// (a duplicate would fail the whole scrape).
		byName := map[string]Pool{}
		for _, p := range (*fn)() {
			q := byName[p.Plugin]
			q.Idle += p.Idle
			q.Busy += p.Busy
			byName[p.Plugin] = q
		}
		for name, p := range byName {
			ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(p.Idle), name, "idle")
			ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(p.Busy), name, "busy")
		}
	}
	if fn := s.m.attempts.Load(); fn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), AttemptsTimeout)
		counts, err := (*fn)(ctx)
		cancel()
		if err == nil {
			for state, n := range counts {
				ch <- prometheus.MustNewConstMetric(attemptsDesc, prometheus.GaugeValue, float64(n), state)
			}
		}
	}
	if fn := s.m.sessions.Load(); fn != nil {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64((*fn)()))
	}
}
