package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
)

// The event streams' own rules, with the store's marks given by the test
// (the end-to-end tests in cmd/plugboard/e2e watch a real board).

const (
	testProject = "11111111-2222-4333-8444-555555555555"
	testAttempt = "66666666-7777-4888-8999-000000000000"
)

// marksDashboard is a loopback dashboard without tokens whose marks the
// test sets.
func marksDashboard(t *testing.T) (*Dashboard, func(key, v string)) {
	t.Helper()
	var mu sync.Mutex
	marks := map[string]string{}
	d := New(Options{
		Local: &abi.Caller{ID: "local", Role: "SUPERVISOR"},
		Call: func(_ context.Context, c *abi.Caller, tool string, args json.RawMessage) (json.RawMessage, *abi.Envelope) {
			if tool == "get_attempt_status" && strings.Contains(string(args), "00000000-0000-4000-8000-000000000000") {
				return nil, abi.NewEnvelope(abi.CodePermissionDenied, "not yours", "watch your own attempt")
			}
			return json.RawMessage(`{}`), nil
		},
		Tools:   func(*abi.Caller) []Tool { return nil },
		Plugins: func(context.Context) any { return nil },
		Marks: func(_ context.Context, projects, attempts []string) (map[string]string, error) {
			mu.Lock()
			defer mu.Unlock()
			out := map[string]string{}
			for k, v := range marks {
				out[k] = v
			}
			return out, nil
		},
	})
	t.Cleanup(d.Close)
	return d, func(key, v string) { mu.Lock(); marks[key] = v; mu.Unlock() }
}

// TestEventStreamLimits: at most maxStreamsPerIdentity streams of one
// identity (the next: resource_exhausted, retryable, naming the tabs) and
// maxStreams in all (unavailable, retryable); none once closed.
func TestEventStreamLimits(t *testing.T) {
	d, _ := marksDashboard(t)
	var all []*stream
	for i := range maxStreamsPerIdentity {
		s := &stream{identity: "alice", project: testProject, ch: make(chan liveEvent, 1)}
		if env := d.hub.add(s); env != nil {
			t.Fatalf("stream %d: %v", i+1, env)
		}
		all = append(all, s)
	}
	env := d.hub.add(&stream{identity: "alice", project: testProject, ch: make(chan liveEvent, 1)})
	if env == nil || env.Code != abi.CodeResourceExhausted || !env.Retryable || !strings.Contains(env.Hint, "close other dashboard tabs") {
		t.Fatalf("the 9th stream of one identity: %+v", env)
	}
	for i := len(all); i < maxStreams; i++ {
		s := &stream{identity: fmt.Sprintf("agent-%d", i/maxStreamsPerIdentity), project: testProject, ch: make(chan liveEvent, 1)}
		if env := d.hub.add(s); env != nil {
			t.Fatalf("stream %d: %v", i+1, env)
		}
		all = append(all, s)
	}
	env = d.hub.add(&stream{identity: "someone-new", project: testProject, ch: make(chan liveEvent, 1)})
	if env == nil || env.Code != abi.CodeUnavailable || !env.Retryable {
		t.Fatalf("stream %d in all: %+v", maxStreams+1, env)
	}
	d.hub.remove(all[0])
	if env := d.hub.add(&stream{identity: "alice", project: testProject, ch: make(chan liveEvent, 1)}); env != nil {
		t.Fatalf("a stream after one closed: %v", env)
	}
	d.Close()
	if env := d.hub.add(&stream{identity: "bob", project: testProject, ch: make(chan liveEvent, 1)}); env == nil || env.Code != abi.CodeUnavailable {
		t.Fatalf("a stream after Close: %+v", env)
	}
}

// TestEventStreamServes: a stream answers ready, then an event for each
// mark that moved (board for a project, attempt with its kinds), refuses
// bad ids and an attempt the caller's get_attempt_status refuses, and ends
// when the dashboard closes.
func TestEventStreamServes(t *testing.T) {
	d, set := marksDashboard(t)
	srv := httptest.NewServer(d)
	defer srv.Close()

	for q, want := range map[string]int{"project_id=nope": 400, "": 400, "attempt_id=00000000-0000-4000-8000-000000000000": 403} {
		res, err := http.Get(srv.URL + "/ui/api/events?" + q)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		res.Body.Close()
		if res.StatusCode != want || m["ok"] != false {
			t.Errorf("events?%s: %d %v, want %d and the envelope", q, res.StatusCode, m, want)
		}
	}

	set(MarkCards(testProject), "1")
	set(MarkLogs(testAttempt), "1")
	res, err := http.Get(srv.URL + "/ui/api/events?project_id=" + testProject + "&attempt_id=" + testAttempt)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("events: %d %v", res.StatusCode, res.Header)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(3 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended waiting for %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("no %q within 3 s", prefix)
			}
		}
	}
	next("retry: 1000")
	next("event: ready")
	if l := next("data: "); l != `data: {"attempt_id":"`+testAttempt+`","project_id":"`+testProject+`"}` {
		t.Errorf("ready: %s", l)
	}
	// The first reading of the marks tells the new stream to read: what
	// changed since its ready event would be missed otherwise.
	next("event: board")
	time.Sleep(3 * watchEvery)
	for len(lines) > 0 {
		<-lines
	}
	set(MarkLogs(testAttempt), "2")
	next("event: attempt")
	if l := next("data: "); l != `data: {"attempt_id":"`+testAttempt+`","what":["logs"]}` {
		t.Errorf("attempt event: %s", l)
	}
	set(MarkCards(testProject), "2")
	next("event: board")
	if l := next("data: "); l != `data: {"project_id":"`+testProject+`"}` {
		t.Errorf("board event: %s", l)
	}
	d.Close()
	timeout := time.After(3 * time.Second)
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream is open 3 s after Close")
		}
	}
}
