package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runner executes one scenario's steps against a caller.
type runner struct {
	c       Client
	setup   Setup // merged, defaults filled in
	vars    *vars
	outputs map[string]*jsonschema.Resolved // outputSchema per tool
	gateDir string
	gates   map[string]string // name → file
	gatesMu sync.Mutex
	logTail func() string // the server's last stderr lines, for protocol failures
}

// packError is a mistake in the pack found at run time (an undefined
// variable, a path that does not parse after substitution): waiting longer
// cannot fix it.
type packError struct{ msg string }

func (e *packError) Error() string { return e.msg }

func isPackError(err error) bool {
	var pe *packError
	return errors.As(err, &pe)
}

// gateVar resolves ${gate.NAME} (the gate's file) and ${wait.NAME} (a
// shell loop that waits for it).
func (r *runner) gateVar(name string) (any, bool) {
	kind, gate, ok := strings.Cut(name, ".")
	if !ok || (kind != "gate" && kind != "wait") || gate == "" || r.gateDir == "" {
		return nil, false
	}
	path := r.gate(gate)
	if kind == "gate" {
		return path, true
	}
	return fmt.Sprintf("while [ ! -e '%s' ]; do sleep 0.02; done", path), true
}

func (r *runner) gate(name string) string {
	r.gatesMu.Lock()
	defer r.gatesMu.Unlock()
	if r.gates == nil {
		r.gates = map[string]string{}
	}
	p, ok := r.gates[name]
	if !ok {
		p = filepath.Join(r.gateDir, fmt.Sprintf("gate-%d", len(r.gates)+1))
		r.gates[name] = p
	}
	return p
}

// openGates opens every gate, so no script outlives the scenario.
func (r *runner) openGates() {
	r.gatesMu.Lock()
	defer r.gatesMu.Unlock()
	for _, p := range r.gates {
		os.WriteFile(p, nil, 0o644)
	}
}

// run executes the steps in order and stops at the first failure, which it
// names: "step 4 (wait until settled): get_attempt_status {...}: ...".
func (r *runner) run(ctx context.Context, steps []Step) error {
	for i, st := range steps {
		if err := r.step(ctx, st); err != nil {
			label := ""
			if st.Name != "" {
				label = " (" + st.Name + ")"
			}
			return fmt.Errorf("step %d%s: %w", i+1, label, err)
		}
	}
	return nil
}

func (r *runner) step(ctx context.Context, st Step) error {
	switch {
	case st.OpenGate != "":
		if err := os.WriteFile(r.gate(st.OpenGate), nil, 0o644); err != nil {
			return fmt.Errorf("open gate %s: %w", st.OpenGate, err)
		}
		return nil
	case st.SleepMS > 0:
		return sleepCtx(ctx, time.Duration(st.SleepMS)*time.Millisecond)
	case st.Tools != nil:
		return r.toolsStep(ctx, st)
	}
	return r.callStep(ctx, st)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func ms(v, def int) time.Duration {
	if v == 0 {
		v = def
	}
	return time.Duration(v) * time.Millisecond
}

func (r *runner) callStep(ctx context.Context, st Step) error {
	var args map[string]any
	if st.Args != nil {
		a, err := r.vars.subst(map[string]any(st.Args))
		if err != nil {
			return fmt.Errorf("%s args: %w", st.Call, err)
		}
		args = a.(map[string]any)
	} else {
		args = map[string]any{}
	}
	what := st.Call + " " + short(args, 240)
	if st.Wait != nil {
		o, err := r.waitFor(ctx, st, args)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := st.Expect.eval(o, r.vars); err != nil {
			return fmt.Errorf("%s: once the wait held: %w; result: %s", what, err, short(o.doc, 500))
		}
		return r.capture(st.Capture, o.doc)
	}
	n := max(st.Repeat, st.Parallel, 1)
	outs := make([]outcome, n)
	errs := make([]error, n)
	if st.Parallel > 0 {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { outs[i], errs[i] = r.callRetry(ctx, st, args) })
		}
		wg.Wait()
	} else {
		for i := range n {
			if outs[i], errs[i] = r.callRetry(ctx, st, args); errs[i] != nil {
				break
			}
		}
	}
	nth := func(i int) string {
		if n == 1 {
			return ""
		}
		return fmt.Sprintf("call %d of %d: ", i+1, n)
	}
	for i := range n {
		if errs[i] != nil {
			return fmt.Errorf("%s: %s%w", what, nth(i), errs[i])
		}
		if err := st.Expect.eval(outs[i], r.vars); err != nil {
			return fmt.Errorf("%s: %s%w; result: %s", what, nth(i), err, short(outs[i].doc, 500))
		}
	}
	for _, p := range st.Same {
		path, err := r.vars.str(p)
		if err != nil {
			return err
		}
		first, err := lookupPath(outs[0].doc, path)
		if err != nil {
			return fmt.Errorf("%s: same %s: call 1: %v", what, path, err)
		}
		for i := 1; i < n; i++ {
			v, err := lookupPath(outs[i].doc, path)
			if err != nil {
				return fmt.Errorf("%s: same %s: call %d: %v", what, path, i+1, err)
			}
			if !equal(v, first) {
				return fmt.Errorf("%s: expected the same %s from all %d calls, got %s (call 1) and %s (call %d)",
					what, path, n, short(first, 120), short(v, 120), i+1)
			}
		}
	}
	return r.capture(st.Capture, outs[0].doc)
}

// callRetry calls once, again while the answer is an error code of
// st.RetryOn and the step's timeout allows.
func (r *runner) callRetry(ctx context.Context, st Step, args map[string]any) (outcome, error) {
	deadline := time.Now().Add(ms(0, r.setup.TimeoutMS))
	for {
		o, err := r.call(ctx, st.Call, args)
		if err != nil || !o.isError || !slices.Contains(st.RetryOn, o.code()) || time.Now().After(deadline) {
			return o, err
		}
		if err := sleepCtx(ctx, ms(0, r.setup.IntervalMS)); err != nil {
			return o, err
		}
	}
}

// waitFor polls the call until st.Wait.Until holds.
func (r *runner) waitFor(ctx context.Context, st Step, args map[string]any) (outcome, error) {
	timeout := ms(st.Wait.TimeoutMS, r.setup.TimeoutMS)
	interval := ms(st.Wait.IntervalMS, r.setup.IntervalMS)
	start := time.Now()
	for polls := 1; ; polls++ {
		o, err := r.call(ctx, st.Call, args)
		if err != nil {
			return o, err
		}
		miss := st.Wait.Until.eval(o, r.vars)
		if miss == nil {
			return o, nil
		}
		if isPackError(miss) {
			return o, miss
		}
		if time.Since(start) >= timeout {
			return o, fmt.Errorf("waited %s (%s) and the condition never held: %v; last result: %s",
				timeout, plural(polls, "call"), miss, short(o.doc, 500))
		}
		if err := sleepCtx(ctx, interval); err != nil {
			return o, fmt.Errorf("%w while waiting; last mismatch: %v", err, miss)
		}
	}
}

// call makes one tool call, decodes its result and validates a success
// against the tool's outputSchema.
func (r *runner) call(ctx context.Context, tool string, args map[string]any) (outcome, error) {
	cctx, cancel := context.WithTimeout(ctx, ms(0, r.setup.CallTimeoutMS))
	defer cancel()
	res, err := r.c.CallTool(cctx, tool, args)
	if err != nil {
		msg := fmt.Sprintf("protocol error (no tool result): %v", err)
		if ctx.Err() == nil && cctx.Err() != nil {
			msg = fmt.Sprintf("no answer within %s (call_timeout_ms): %v", ms(0, r.setup.CallTimeoutMS), err)
		}
		if r.logTail != nil {
			if t := r.logTail(); t != "" {
				msg += "\nserver log (last lines):\n" + t
			}
		}
		return outcome{}, errors.New(msg)
	}
	o := outcome{isError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			o.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			err = json.Unmarshal(b, &o.doc)
		}
		if err != nil {
			return o, fmt.Errorf("structuredContent: %v", err)
		}
	} else if err := json.Unmarshal([]byte(o.text), &o.doc); err != nil {
		o.doc = o.text
	}
	if o.isError && res.StructuredContent != nil {
		// The outputSchema describes successes; a client that checks
		// structuredContent against it on isError too (the TypeScript SDK)
		// would throw the envelope away.
		if s := r.outputs[tool]; s != nil {
			if err := s.Validate(o.doc); err != nil {
				return o, fmt.Errorf("an error result carries structuredContent that fails %s's outputSchema (clients that check it lose the envelope): %v; result: %s", tool, err, short(o.doc, 500))
			}
		}
	}
	if !o.isError {
		if s := r.outputs[tool]; s != nil {
			if err := s.Validate(o.doc); err != nil {
				return o, fmt.Errorf("the result does not validate against %s's outputSchema: %v; result: %s", tool, err, short(o.doc, 500))
			}
		}
	}
	return o, nil
}

func (r *runner) capture(caps map[string]string, doc any) error {
	names := make([]string, 0, len(caps))
	for name := range caps {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		path, err := r.vars.str(caps[name])
		if err != nil {
			return err
		}
		v, err := lookupPath(doc, path)
		if err != nil {
			return fmt.Errorf("capture %s: %v in %s", name, err, short(doc, 400))
		}
		r.vars.set(name, v)
	}
	return nil
}

// toolsStep lists the tools and checks the listing.
func (r *runner) toolsStep(ctx context.Context, st Step) error {
	lctx, cancel := context.WithTimeout(ctx, ms(0, r.setup.CallTimeoutMS))
	defer cancel()
	list, err := r.c.ListTools(lctx)
	if err != nil {
		return fmt.Errorf("tools/list: %v", err)
	}
	doc, byName, err := toolsDoc(list, st.Tools.Select)
	if err != nil {
		return err
	}
	var fails []string
	described := st.Tools.Described
	if slices.Contains(described, "*") {
		described = nil
		for _, t := range list {
			if len(st.Tools.Select) == 0 || slices.Contains(st.Tools.Select, t.Name) {
				described = append(described, t.Name)
			}
		}
	}
	for _, name := range described {
		t := byName[name]
		if t == nil {
			fails = append(fails, fmt.Sprintf("described: tools/list has no %s", name))
			continue
		}
		var undocumented []string
		for _, part := range []struct {
			kind   string
			schema any
		}{{"input", t.InputSchema}, {"output", t.OutputSchema}} {
			var s map[string]any
			b, _ := json.Marshal(part.schema)
			json.Unmarshal(b, &s)
			undocumented = append(undocumented, undescribed(name+"."+part.kind, s)...)
		}
		if len(undocumented) > 0 {
			fails = append(fails, fmt.Sprintf("schema properties without a description: %s", strings.Join(undocumented, ", ")))
		}
	}
	for i, in := range st.Tools.Instances {
		label := in.Name
		if label == "" {
			label = fmt.Sprintf("instance %d", i+1)
		}
		t := byName[in.Tool]
		if t == nil {
			fails = append(fails, fmt.Sprintf("%s: tools/list has no %s", label, in.Tool))
			continue
		}
		kind, raw := "input", any(t.InputSchema)
		if in.Schema == "output" {
			kind, raw = "output", t.OutputSchema
		}
		s, err := resolveSchema(raw)
		if err != nil {
			fails = append(fails, fmt.Sprintf("%s: %s's %sSchema: %v", label, in.Tool, kind, err))
			continue
		}
		val, err := r.vars.subst(in.Value)
		if err != nil {
			return err
		}
		verr := s.Validate(val)
		switch {
		case in.Valid && verr != nil:
			fails = append(fails, fmt.Sprintf("%s: %s's %sSchema refuses %s, which it must accept: %v", label, in.Tool, kind, short(val, 200), verr))
		case !in.Valid && verr == nil:
			fails = append(fails, fmt.Sprintf("%s: %s's %sSchema accepts %s, which it must refuse", label, in.Tool, kind, short(val, 200)))
		}
	}
	if st.Expect != nil {
		for _, c := range st.Expect.Fields {
			if err := c.eval(doc, r.vars); err != nil {
				if isPackError(err) {
					return err
				}
				fails = append(fails, err.Error())
			}
		}
	}
	if len(fails) > 0 {
		return fmt.Errorf("tools/list: %s", strings.Join(fails, "; "))
	}
	return r.capture(st.Capture, doc)
}

// toolsDoc is the document a tools step checks: {"tools": [...], "names":
// [...], "by_name": {...}}, restricted to sel when given.
func toolsDoc(list []*mcp.Tool, sel []string) (any, map[string]*mcp.Tool, error) {
	byName := map[string]*mcp.Tool{}
	var all []string
	for _, t := range list {
		byName[t.Name] = t
		all = append(all, t.Name)
	}
	chosen := list
	if len(sel) > 0 {
		chosen = nil
		var missing []string
		for _, name := range sel {
			if t := byName[name]; t != nil {
				chosen = append(chosen, t)
			} else {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			slices.Sort(all)
			return nil, nil, fmt.Errorf("tools/list lacks %s (it lists %s)", strings.Join(missing, ", "), strings.Join(all, ", "))
		}
	}
	tools := []any{}
	names := []any{}
	index := map[string]any{}
	for _, t := range chosen {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, nil, fmt.Errorf("tool %s: %v", t.Name, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, nil, fmt.Errorf("tool %s: %v", t.Name, err)
		}
		tools = append(tools, m)
		names = append(names, t.Name)
		index[t.Name] = m
	}
	return map[string]any{"tools": tools, "names": names, "by_name": index}, byName, nil
}

// undescribed lists the properties of a schema (recursively through
// properties, items and oneOf/anyOf/allOf branches) without a description.
func undescribed(where string, s map[string]any) []string {
	var out []string
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ps, _ := props[name].(map[string]any)
		if d, _ := ps["description"].(string); strings.TrimSpace(d) == "" {
			out = append(out, where+"."+name)
		}
		out = append(out, undescribed(where+"."+name, ps)...)
	}
	if items, ok := s["items"].(map[string]any); ok {
		out = append(out, undescribed(where+"[]", items)...)
	}
	for _, key := range []string{"oneOf", "anyOf", "allOf"} {
		branches, _ := s[key].([]any)
		for _, br := range branches {
			if bs, ok := br.(map[string]any); ok {
				out = append(out, undescribed(where, bs)...)
			}
		}
	}
	return out
}

// resolveSchema turns a tool's schema (as the client decoded it) into a
// validator.
func resolveSchema(raw any) (*jsonschema.Resolved, error) {
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// loadTools lists the tools once at the start of a scenario and resolves
// every outputSchema; one that does not resolve fails the scenario.
func (r *runner) loadTools(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, ms(0, r.setup.CallTimeoutMS))
	defer cancel()
	list, err := r.c.ListTools(lctx)
	if err != nil {
		return fmt.Errorf("tools/list: %v", err)
	}
	r.outputs = map[string]*jsonschema.Resolved{}
	for _, t := range list {
		if t.OutputSchema == nil {
			continue
		}
		s, err := resolveSchema(t.OutputSchema)
		if err != nil {
			return fmt.Errorf("tools/list: %s's outputSchema does not resolve: %v", t.Name, err)
		}
		r.outputs[t.Name] = s
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
