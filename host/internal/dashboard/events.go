package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/plugboard/plugboard/abi"
)

// Live events. A page opens one Server-Sent Events stream for the project
// it shows and/or the attempt it shows (GET /ui/api/events?project_id=…&
// attempt_id=…) and reads again only when told something changed. One
// watcher per dashboard, running only while a stream is open, reads the
// marks of the watched projects and attempts from the store every
// watchEvery (Options.Marks: a few indexed aggregates) and sends an event
// to the streams whose mark moved. It reads the store, not the host's
// memory, because the changes come from every host sharing the store and
// from the attempts' processes; its cost is one small query per watched
// project or attempt per tick, whatever the number of pages.

// Limits of the event streams.
const (
	watchEvery = 250 * time.Millisecond
	// activityEvery is how often a board is told that a running agent
	// logged: its cards show "active N s ago", not each line.
	activityEvery = time.Second
	pingEvery     = 15 * time.Second
	// streamLifetime ends a stream; the browser's EventSource reconnects
	// (after retryMillis), which re-checks the session and the access.
	streamLifetime = 10 * time.Minute
	retryMillis    = 1000
	// recheckEvery is how often a stream re-reads its session, so one
	// signed out (or whose token was removed) ends within it.
	recheckEvery = 10 * time.Second
	// maxStreamsPerIdentity and maxStreams bound the open streams: each
	// holds a connection and a goroutine.
	maxStreamsPerIdentity = 8
	maxStreams            = 256
)

// The keys of Options.Marks' answer for a project (MarkCards, MarkActivity)
// and an attempt (MarkLogs, MarkState, MarkMessages): each value changes
// when what a page shows of it changes.
func MarkCards(project string) string    { return "cards " + project }
func MarkActivity(project string) string { return "activity " + project }
func MarkLogs(attempt string) string     { return "logs " + attempt }
func MarkState(attempt string) string    { return "state " + attempt }
func MarkMessages(attempt string) string { return "messages " + attempt }

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// hub owns the open streams and the watcher.
type hub struct {
	d       *Dashboard
	mu      sync.Mutex
	streams map[*stream]struct{}
	per     map[string]int
	// watching is true while the watcher runs (it stops when the last
	// stream closes).
	watching bool
	closed   bool
	done     chan struct{}
}

// stream is one open event stream.
type stream struct {
	identity, project, attempt string
	ch                         chan liveEvent
}

type liveEvent struct {
	name string
	data any
}

func newHub(d *Dashboard) *hub {
	return &hub{d: d, streams: map[*stream]struct{}{}, per: map[string]int{}, done: make(chan struct{})}
}

// Close ends every open stream and refuses new ones: the server is
// shutting down, and a stream would otherwise hold it for its lifetime.
func (d *Dashboard) Close() {
	h := d.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// add registers s, or answers the envelope refusing it.
func (h *hub) add(s *stream) *abi.Envelope {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		env := abi.NewEnvelope(abi.CodeUnavailable, "the server is shutting down", "reload the page in a moment")
		env.Retryable = true
		return env
	case h.per[s.identity] >= maxStreamsPerIdentity:
		env := abi.NewEnvelope(abi.CodeResourceExhausted, fmt.Sprintf("%s has %d live dashboard pages open, the most allowed", s.identity, maxStreamsPerIdentity),
			"close other dashboard tabs, then reload this one")
		env.Retryable = true
		return env
	case len(h.streams) >= maxStreams:
		env := abi.NewEnvelope(abi.CodeUnavailable, fmt.Sprintf("the server has %d live dashboard pages open, the most it keeps", maxStreams),
			"reload in a minute; the operator can see who is connected in the host's log")
		env.Retryable = true
		return env
	}
	h.streams[s] = struct{}{}
	h.per[s.identity]++
	if !h.watching {
		h.watching = true
		go h.watch()
	}
	return nil
}

func (h *hub) remove(s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.streams, s)
	if h.per[s.identity]--; h.per[s.identity] <= 0 {
		delete(h.per, s.identity)
	}
}

// targets returns the distinct projects and attempts the open streams
// watch, and false when none is open (the watcher then stops).
func (h *hub) targets() (projects, attempts []string, any bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.streams) == 0 || h.closed {
		h.watching = false
		return nil, nil, false
	}
	seenP, seenA := map[string]bool{}, map[string]bool{}
	for s := range h.streams {
		if s.project != "" && !seenP[s.project] {
			seenP[s.project] = true
			projects = append(projects, s.project)
		}
		if s.attempt != "" && !seenA[s.attempt] {
			seenA[s.attempt] = true
			attempts = append(attempts, s.attempt)
		}
	}
	return projects, attempts, true
}

// send hands e to every stream watching project or attempt; a stream whose
// buffer is full misses it, which its next event covers (every event means
// "read again").
func (h *hub) send(project, attempt string, e liveEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.streams {
		if (project != "" && s.project == project) || (attempt != "" && s.attempt == attempt) {
			select {
			case s.ch <- e:
			default:
			}
		}
	}
}

// watch reads the marks every watchEvery while streams are open and sends
// an event for each that moved.
func (h *hub) watch() {
	last := map[string]string{}
	lastActivity := map[string]time.Time{}
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-h.done:
			h.mu.Lock()
			h.watching = false
			h.mu.Unlock()
			return
		case <-t.C:
		}
		projects, attempts, ok := h.targets()
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		marks, err := h.d.opts.Marks(ctx, projects, attempts)
		cancel()
		if err != nil {
			h.d.opts.Logger.Warn("dashboard: live marks unavailable; pages are not told of changes until the store answers", "err", err)
			continue
		}
		// A mark seen for the first time moved too: it is a stream's
		// that opened since the last tick, and what changed between its
		// ready event and this read would be missed otherwise (the page
		// reads once more, for nothing at worst).
		moved := func(key string) bool {
			v, ok := marks[key]
			old, had := last[key]
			last[key] = v
			return ok && (!had || old != v)
		}
		now := time.Now()
		for _, p := range projects {
			cards := moved(MarkCards(p))
			activity := false
			if v, old := marks[MarkActivity(p)], last[MarkActivity(p)]; v != old && now.Sub(lastActivity[p]) >= activityEvery {
				activity = moved(MarkActivity(p))
				lastActivity[p] = now
			}
			if cards || activity {
				h.send(p, "", liveEvent{"board", map[string]any{"project_id": p}})
			}
		}
		for _, a := range attempts {
			var what []string
			if moved(MarkLogs(a)) {
				what = append(what, "logs")
			}
			if moved(MarkState(a)) {
				// A process that started or ended changes the worktree.
				what = append(what, "state", "changes")
			}
			if moved(MarkMessages(a)) {
				what = append(what, "messages")
			}
			if len(what) > 0 {
				h.send("", a, liveEvent{"attempt", map[string]any{"attempt_id": a, "what": what}})
			}
		}
		// Forget what no stream watches any more.
		keep := map[string]bool{}
		for _, p := range projects {
			keep[MarkCards(p)], keep[MarkActivity(p)] = true, true
		}
		for _, a := range attempts {
			keep[MarkLogs(a)], keep[MarkState(a)], keep[MarkMessages(a)] = true, true, true
		}
		for k := range last {
			if !keep[k] {
				delete(last, k)
			}
		}
		for p := range lastActivity {
			if !keep[MarkCards(p)] {
				delete(lastActivity, p)
			}
		}
	}
}

// events serves one stream for the signed-in identity as c.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request, identity string, c *abi.Caller) {
	if r.Method != http.MethodGet {
		writeEnvelope(w, http.StatusMethodNotAllowed, abi.NewEnvelope(abi.CodeInvalidArgument, "use GET", "open the stream with EventSource"))
		return
	}
	if d.opts.Marks == nil {
		writeEnvelope(w, http.StatusNotFound, abi.NewEnvelope(abi.CodeUnavailable, "this server has no board to watch", "serve with a data directory"))
		return
	}
	q := r.URL.Query()
	s := &stream{identity: identity, project: q.Get("project_id"), attempt: q.Get("attempt_id"), ch: make(chan liveEvent, 16)}
	for field, v := range map[string]string{"project_id": s.project, "attempt_id": s.attempt} {
		if v != "" && !uuidRE.MatchString(v) {
			writeEnvelope(w, http.StatusBadRequest, abi.NewEnvelope(abi.CodeInvalidArgument, field+" is not a UUID",
				"reload the dashboard").WithDetail("field", field))
			return
		}
	}
	if s.project == "" && s.attempt == "" {
		writeEnvelope(w, http.StatusBadRequest, abi.NewEnvelope(abi.CodeMissingRequired, "name what to watch: project_id, attempt_id or both",
			"reload the dashboard"))
		return
	}
	// A stream tells when something changed, not what: still, it may
	// watch only what its caller could read, through the tools themselves
	// (policy and scope), so it says nothing of other work.
	ctx := r.Context()
	if s.project != "" {
		if _, env := d.opts.Call(ctx, c, "list_tasks", json.RawMessage(`{"project_id":"`+s.project+`","limit":1}`)); env != nil {
			writeEnvelope(w, envelopeStatus(env), env)
			return
		}
	}
	if s.attempt != "" {
		if _, env := d.opts.Call(ctx, c, "get_attempt_status", json.RawMessage(`{"attempt_id":"`+s.attempt+`"}`)); env != nil {
			writeEnvelope(w, envelopeStatus(env), env)
			return
		}
	}
	if env := d.hub.add(s); env != nil {
		status := http.StatusServiceUnavailable
		if env.Code == abi.CodeResourceExhausted {
			status = http.StatusTooManyRequests
		}
		w.Header().Set("Retry-After", "5")
		writeEnvelope(w, status, env)
		return
	}
	defer d.hub.remove(s)

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(name string, data any) bool {
		b, _ := json.Marshal(data)
		// A client that stops reading must not hold the stream: each
		// write has a deadline.
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", retryMillis); err != nil {
		return
	}
	ready := map[string]any{"project_id": nullable(s.project), "attempt_id": nullable(s.attempt)}
	if !write("ready", ready) {
		return
	}
	lifetime := time.NewTimer(streamLifetime)
	defer lifetime.Stop()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	recheck := time.NewTicker(recheckEvery)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.hub.done:
			return
		case <-lifetime.C:
			return
		case <-recheck.C:
			still, _, err := d.who(r)
			if err != nil || still != identity {
				return
			}
		case <-ping.C:
			_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case e := <-s.ch:
			if !write(e.name, e.data) {
				return
			}
		}
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// envelopeStatus is the HTTP status a refused stream answers with: the
// browser's EventSource gives up on a non-200 answer instead of retrying.
func envelopeStatus(env *abi.Envelope) int {
	switch env.Code {
	case abi.CodePermissionDenied:
		return http.StatusForbidden
	case abi.CodeNotFound, abi.CodeToolNotFound:
		return http.StatusNotFound
	case abi.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}
