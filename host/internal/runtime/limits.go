package runtime

import (
	"fmt"
	"sync"

	"github.com/plugboard/plugboard/abi"
)

// A plugin's linear memory is capped (memory_limit_mib), but what it hands
// the host to keep, write or hold lives outside that memory: Extism vars
// (kept as long as their instance), log lines, notifications to the MCP
// client, the decision log's record of each HTTP request, response headers,
// outbound connections. Each of those is counted here against a cap the
// operator can read (plugboard plugin inspect) and set per plugin
// (plugins.settings.NAME), so a plugin cannot grow the host's memory, log or
// sockets past what its settings allow. Reaching a cap is a
// resource_exhausted envelope naming the setting: the answer of a plugboard
// host function that can answer an error (the guest may go on), else the
// end of the call. Bytes are charged with a fixed entryOverhead per entry
// (var, line, notification) so that a flood of empty ones is bounded too.

// Limits are a plugin's caps on what it makes the host keep, write or hold
// outside its linear memory. A zero (or negative) field takes the engine's
// value (Config.Limits), whose zero fields take DefaultLimits'.
type Limits struct {
	// MaxVarBytes caps the Extism vars of one instance, which live as long
	// as the instance: every key and value, plus entryOverhead per var.
	MaxVarBytes int `json:"max_var_bytes,omitempty"`
	// MaxVars caps how many Extism vars one instance holds.
	MaxVars int `json:"max_vars,omitempty"`
	// MaxLogBytes caps the log lines one call writes to the host's log
	// (Extism's log_*, plugboard's log): each line's bytes plus
	// entryOverhead.
	MaxLogBytes int `json:"max_log_bytes,omitempty"`
	// MaxNotificationBytes caps what one call sends the MCP client
	// (progress, log messages, resource updates): each payload plus
	// entryOverhead.
	MaxNotificationBytes int `json:"max_notification_bytes,omitempty"`
	// MaxHTTPRequests caps the HTTP requests of one call, each a record the
	// decision log keeps for the call.
	MaxHTTPRequests int `json:"max_http_requests,omitempty"`
	// MaxHTTPConnections caps the plugin's outbound connections open at
	// once (being dialled, in use or idle), across its instances.
	MaxHTTPConnections int `json:"max_http_connections,omitempty"`
	// MaxHTTPHeaderBytes caps the header block of one HTTP response.
	MaxHTTPHeaderBytes int `json:"max_http_header_bytes,omitempty"`
}

// DefaultLimits are the caps of a plugin whose settings and engine set none.
func DefaultLimits() Limits {
	return Limits{
		MaxVarBytes:          1 << 20,
		MaxVars:              4096,
		MaxLogBytes:          1 << 20,
		MaxNotificationBytes: 1 << 20,
		MaxHTTPRequests:      256,
		MaxHTTPConnections:   16,
		MaxHTTPHeaderBytes:   64 << 10,
	}
}

// Or returns l with each field that is not positive taken from d.
func (l Limits) Or(d Limits) Limits {
	pick := func(v, dv int) int {
		if v > 0 {
			return v
		}
		return dv
	}
	return Limits{
		MaxVarBytes:          pick(l.MaxVarBytes, d.MaxVarBytes),
		MaxVars:              pick(l.MaxVars, d.MaxVars),
		MaxLogBytes:          pick(l.MaxLogBytes, d.MaxLogBytes),
		MaxNotificationBytes: pick(l.MaxNotificationBytes, d.MaxNotificationBytes),
		MaxHTTPRequests:      pick(l.MaxHTTPRequests, d.MaxHTTPRequests),
		MaxHTTPConnections:   pick(l.MaxHTTPConnections, d.MaxHTTPConnections),
		MaxHTTPHeaderBytes:   pick(l.MaxHTTPHeaderBytes, d.MaxHTTPHeaderBytes),
	}
}

// LimitSetting is one cap as the operator sees it: the setting's name in
// plugins.settings.NAME, its value and what it bounds.
type LimitSetting struct {
	Setting string
	Value   int64
	// Unit is "bytes", "MiB" or "" (a count).
	Unit string
	What string
}

// Settings lists the caps by their plugins.settings names, in the order
// docs/plugin-authors.md documents them ("Per-plugin settings").
func (l Limits) Settings() []LimitSetting {
	return []LimitSetting{
		{"max_var_bytes", int64(l.MaxVarBytes), "bytes", fmt.Sprintf("Extism vars of one instance: keys and values, %d bytes more per var", entryOverhead)},
		{"max_vars", int64(l.MaxVars), "", "Extism vars of one instance"},
		{"max_log_bytes", int64(l.MaxLogBytes), "bytes", fmt.Sprintf("log lines of one call, %d bytes more per line", entryOverhead)},
		{"max_notification_bytes", int64(l.MaxNotificationBytes), "bytes", fmt.Sprintf("progress and messages one call sends the MCP client, %d bytes more each", entryOverhead)},
		{"max_http_requests", int64(l.MaxHTTPRequests), "", "HTTP requests of one call"},
		{"max_http_connections", int64(l.MaxHTTPConnections), "", "outbound connections open at once, all instances together"},
		{"max_http_header_bytes", int64(l.MaxHTTPHeaderBytes), "bytes", "headers of one HTTP response"},
	}
}

// entryOverhead is what each var, log line or notification is charged on
// top of its bytes: about what the host's bookkeeping of it costs (a map
// entry and slice headers, a log record), so that many empty entries are
// bounded like a few large ones.
const entryOverhead = 64

// Limits are the caps the plugin runs under: its settings' over the
// engine's.
func (p *Plugin) Limits() Limits { return p.limits }

// capEnvelope is the resource_exhausted envelope of a plugin that went past
// one of its Limits: what says what was capped, setting is the field of
// plugins.settings.NAME that sets it, got and limit are in unit ("bytes",
// or "count" for a number of things).
func (k *kernel) capEnvelope(what, setting string, got, limit int, unit string) *abi.Envelope {
	p := k.plugin.name
	full := "plugins.settings." + p + "." + setting
	shown := fmt.Sprintf("%d > %d", got, limit)
	if unit == "bytes" {
		shown = fmt.Sprintf("%d bytes > %d", got, limit)
	}
	env := abi.NewEnvelope(abi.CodeResourceExhausted,
		fmt.Sprintf("plugin %s exceeded its cap on %s (%s): %s", p, what, full, shown),
		fmt.Sprintf("ask for less, or call again; for the operator: if plugin %s needs more, raise %s in the configuration file", p, full))
	env.Details = map[string]any{"plugin": p, "limit": setting, unit: got, "max_" + unit: limit, "setting": full}
	return env
}

// overCap ends the call with capEnvelope: for host functions that have no
// way to answer the guest an error.
func (k *kernel) overCap(what, setting string, got, limit int, unit string) {
	k.fail(k.capEnvelope(what, setting, got, limit, unit))
}

// chargeLog counts one log line of n bytes against MaxLogBytes; false when
// the line would go past it (and is then not counted).
func (k *kernel) chargeLog(n int) (total int, ok bool) {
	total = k.logBytes + n + entryOverhead
	if total > k.plugin.limits.MaxLogBytes {
		return total, false
	}
	k.logBytes = total
	return total, true
}

// chargeNotification counts one notification with a payload of n bytes
// against MaxNotificationBytes, like chargeLog.
func (k *kernel) chargeNotification(n int) (total int, ok bool) {
	total = k.notifyBytes + n + entryOverhead
	if total > k.plugin.limits.MaxNotificationBytes {
		return total, false
	}
	k.notifyBytes = total
	return total, true
}

// logOverCap and notificationOverCap are the envelopes of a line or a
// notification past its cap.
func (k *kernel) logOverCap(total int) *abi.Envelope {
	return k.capEnvelope("log lines in one call", "max_log_bytes", total, k.plugin.limits.MaxLogBytes, "bytes")
}

func (k *kernel) notificationOverCap(total int) *abi.Envelope {
	return k.capEnvelope("notifications to the client in one call", "max_notification_bytes", total, k.plugin.limits.MaxNotificationBytes, "bytes")
}

// connLimiter counts connections open at once against a cap; nil counts
// nothing.
type connLimiter struct {
	mu   sync.Mutex
	open int
	max  int
}

func newConnLimiter(limit int) *connLimiter { return &connLimiter{max: limit} }

// tryAcquire takes a connection slot, without waiting.
func (l *connLimiter) tryAcquire() bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		return false
	}
	l.open++
	return true
}

func (l *connLimiter) release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.open--
	l.mu.Unlock()
}

// Open is how many connections hold a slot.
func (l *connLimiter) Open() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}
