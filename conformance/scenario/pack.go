package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Pack is a scenario pack: a named, versioned list of scenarios with
// setup defaults and reusable step fragments.
type Pack struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Spec names the specification the pack encodes (informational).
	Spec string `json:"spec,omitempty"`
	// Setup is the default setup of every scenario; a scenario's own
	// setup overrides it field by field (see Setup).
	Setup Setup `json:"setup"`
	// Fragments are named step lists a step can inline with "include".
	Fragments map[string][]Step `json:"fragments,omitempty"`
	Scenarios []Scenario        `json:"scenarios"`
}

// Setup describes the ephemeral board and server of a scenario.
type Setup struct {
	// Project is the name of the project created over the repository
	// (default "demo").
	Project string `json:"project,omitempty"`
	// Repo is the repository's directory name, hence its repo name in the
	// project (default "app").
	Repo string `json:"repo,omitempty"`
	// Files are committed to the repository's main branch before the
	// project is created: path (slash-separated, relative) → content.
	// A scenario's files are added to the pack's (same path: scenario's).
	Files map[string]string `json:"files,omitempty"`
	// SetupScript and CleanupScript are the repo's scripts, run in each
	// attempt's worktree before and after the agent. ${vars} apply.
	SetupScript   string `json:"setup_script,omitempty"`
	CleanupScript string `json:"cleanup_script,omitempty"`
	// ServeArgs are extra `plugboard serve` flags, e.g. ["--guard","safe"];
	// a scenario's are appended to the pack's.
	ServeArgs []string `json:"serve_args,omitempty"`
	// Attempt, when set, records an idle attempt (no session, no process)
	// on a new task before the server starts; ${attempt_id} and
	// ${task_id} name them.
	Attempt *AttemptSetup `json:"attempt,omitempty"`
	// TimeoutMS bounds a step's wait or retries (default 30000);
	// IntervalMS is the poll interval (default 30); CallTimeoutMS bounds
	// one tool call (default 60000); ScenarioTimeoutMS bounds the whole
	// scenario including setup (default 120000).
	TimeoutMS         int `json:"timeout_ms,omitempty"`
	IntervalMS        int `json:"interval_ms,omitempty"`
	CallTimeoutMS     int `json:"call_timeout_ms,omitempty"`
	ScenarioTimeoutMS int `json:"scenario_timeout_ms,omitempty"`
}

// AttemptSetup is an attempt recorded before the server starts.
type AttemptSetup struct {
	// TaskTitle is the title of the attempt's task (default "Idle").
	TaskTitle string `json:"task_title,omitempty"`
	// Context starts the server inside the attempt (serve --attempt), so
	// it offers get_context.
	Context bool `json:"context,omitempty"`
}

// Scenario is one WHEN/THEN scenario of a specification.
type Scenario struct {
	// ID is unique in the pack, e.g. "tools-are-discoverable".
	ID string `json:"id"`
	// Requirement is the title of the spec requirement it belongs to.
	Requirement string `json:"requirement"`
	// Name is the scenario's title in the spec.
	Name string `json:"name"`
	// When and Then quote the spec (informational, shown on failure).
	When  string `json:"when,omitempty"`
	Then  string `json:"then,omitempty"`
	Setup Setup  `json:"setup"`
	Steps []Step `json:"steps"`
}

// Step is one action of a scenario. Exactly one of Call, Tools, OpenGate,
// SleepMS and Include is set.
type Step struct {
	// Name labels the step in failure messages.
	Name string `json:"name,omitempty"`

	// Call is a tool to call with Args (${vars} substituted).
	Call string         `json:"call,omitempty"`
	Args map[string]any `json:"args,omitempty"`
	// Tools lists the server's tools (tools/list) and checks them.
	Tools *ToolsStep `json:"tools,omitempty"`
	// OpenGate creates the file of gate ${gate.NAME}, releasing scripts
	// waiting in ${wait.NAME}.
	OpenGate string `json:"open_gate,omitempty"`
	// SleepMS pauses the scenario.
	SleepMS int `json:"sleep_ms,omitempty"`
	// Include inlines the steps of a pack fragment.
	Include string `json:"include,omitempty"`

	// Expect is checked on the call's result (default: success); on a
	// tools step, only its fields apply, to the listing.
	Expect *Expect `json:"expect,omitempty"`
	// Capture stores values of the result as variables: name → path.
	Capture map[string]string `json:"capture,omitempty"`
	// Wait repeats the call until its expectation holds.
	Wait *Wait `json:"wait,omitempty"`
	// Repeat makes the call n times in sequence, Parallel n times at once;
	// every result must meet Expect, and the values at each path of Same
	// must be equal across them. Captures read the first result.
	Repeat   int      `json:"repeat,omitempty"`
	Parallel int      `json:"parallel,omitempty"`
	Same     []string `json:"same,omitempty"`
	// RetryOn repeats a call answered with one of these error codes (e.g.
	// request_in_progress) until it answers otherwise or the timeout.
	RetryOn []string `json:"retry_on,omitempty"`
}

// Wait polls a call until Until holds on its result.
type Wait struct {
	Until      Expect `json:"until"`
	TimeoutMS  int    `json:"timeout_ms,omitempty"`
	IntervalMS int    `json:"interval_ms,omitempty"`
}

// ToolsStep inspects tools/list. Its expectation's fields apply to the
// document {"tools": [...], "names": [...], "by_name": {NAME: tool}}, each
// tool as MCP serialises it (name, description, inputSchema, outputSchema,
// annotations).
type ToolsStep struct {
	// Select restricts the document to these tools, in this order; a
	// missing one fails the step.
	Select []string `json:"select,omitempty"`
	// Described lists tools ("*": every listed one) whose input and output
	// schemas must describe every property, nested ones included.
	Described []string `json:"described,omitempty"`
	// Instances are sample values validated against a tool's schema.
	Instances []Instance `json:"instances,omitempty"`
}

// Instance is a sample value that a tool's input or output schema must
// accept (Valid) or refuse.
type Instance struct {
	Name   string `json:"name,omitempty"`
	Tool   string `json:"tool"`
	Schema string `json:"schema,omitempty"` // "input" (default) or "output"
	Value  any    `json:"value"`
	Valid  bool   `json:"valid"`
}

// Expect is what a result must be.
type Expect struct {
	// OK: true wants a success, false an error envelope. Unset, it is
	// true unless ErrorCode is set.
	OK *bool `json:"ok,omitempty"`
	// ErrorCode wants an error envelope with this code (which implies a
	// non-empty message and hint).
	ErrorCode string `json:"error_code,omitempty"`
	// HintContains are substrings the envelope's hint must contain.
	HintContains stringList `json:"hint_contains,omitempty"`
	// Fields are checks on the structured result (or envelope).
	Fields []Check `json:"fields,omitempty"`
}

func (e *Expect) wantsError() bool {
	return e != nil && (e.ErrorCode != "" || (e.OK != nil && !*e.OK))
}

// stringList is a JSON string or list of strings.
type stringList []string

func (s *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("want a string or a list of strings")
	}
	*s = many
	return nil
}

// Load reads and validates the pack at path.
func Load(path string) (*Pack, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Parse decodes and validates a pack, inlining fragments.
func Parse(b []byte) (*Pack, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Pack
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("decode pack: %w", err)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

func (p *Pack) validate() error {
	if strings.TrimSpace(p.Name) == "" {
		return errors.New("pack has no name")
	}
	if len(p.Scenarios) == 0 {
		return errors.New("pack has no scenarios")
	}
	if err := p.Setup.validate(); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	for name, steps := range p.Fragments {
		for i, st := range steps {
			if st.Include != "" {
				return fmt.Errorf("fragment %s step %d: fragments cannot include fragments", name, i+1)
			}
		}
	}
	seen := map[string]bool{}
	for i := range p.Scenarios {
		sc := &p.Scenarios[i]
		where := fmt.Sprintf("scenario %d (%s)", i+1, sc.ID)
		if !idRE.MatchString(sc.ID) {
			return fmt.Errorf("%s: id must match %s", where, idRE)
		}
		if seen[sc.ID] {
			return fmt.Errorf("%s: duplicate id", where)
		}
		seen[sc.ID] = true
		if strings.TrimSpace(sc.Name) == "" {
			return fmt.Errorf("%s: no name", where)
		}
		if err := sc.Setup.validate(); err != nil {
			return fmt.Errorf("%s setup: %w", where, err)
		}
		var steps []Step
		for j, st := range sc.Steps {
			if st.Include == "" {
				steps = append(steps, st)
				continue
			}
			frag, ok := p.Fragments[st.Include]
			if !ok {
				return fmt.Errorf("%s step %d: no fragment %q", where, j+1, st.Include)
			}
			if st.Call != "" || st.Tools != nil || st.OpenGate != "" || st.SleepMS != 0 || st.Expect != nil ||
				st.Capture != nil || st.Wait != nil || st.Repeat != 0 || st.Parallel != 0 || st.Same != nil || st.RetryOn != nil {
				return fmt.Errorf("%s step %d: include takes no other fields", where, j+1)
			}
			for _, fs := range frag {
				if fs.Name == "" {
					fs.Name = st.Include
				} else {
					fs.Name = st.Include + ": " + fs.Name
				}
				steps = append(steps, fs)
			}
		}
		sc.Steps = steps
		if len(sc.Steps) == 0 {
			return fmt.Errorf("%s: no steps", where)
		}
		for j, st := range sc.Steps {
			if err := st.validate(); err != nil {
				return fmt.Errorf("%s step %d%s: %w", where, j+1, quoteName(st.Name), err)
			}
		}
	}
	return nil
}

func quoteName(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (%s)", name)
}

func (s Setup) validate() error {
	for _, v := range []int{s.TimeoutMS, s.IntervalMS, s.CallTimeoutMS, s.ScenarioTimeoutMS} {
		if v < 0 {
			return errors.New("timeouts and intervals cannot be negative")
		}
	}
	for path := range s.Files {
		if path == "" || strings.HasPrefix(path, "/") || strings.Contains("/"+path+"/", "/../") {
			return fmt.Errorf("file path %q must be relative and stay inside the repository", path)
		}
	}
	if s.Repo != "" && (strings.ContainsAny(s.Repo, `/\`) || s.Repo == "." || s.Repo == "..") {
		return fmt.Errorf("repo %q must be a plain directory name", s.Repo)
	}
	return nil
}

func (st Step) validate() error {
	kinds := 0
	for _, set := range []bool{st.Call != "", st.Tools != nil, st.OpenGate != "", st.SleepMS != 0} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New("a step needs exactly one of call, tools, open_gate, sleep_ms, include")
	}
	if st.SleepMS < 0 || st.Repeat < 0 || st.Parallel < 0 {
		return errors.New("sleep_ms, repeat and parallel cannot be negative")
	}
	if st.Call == "" {
		if st.Wait != nil || st.Repeat != 0 || st.Parallel != 0 || st.Same != nil || st.RetryOn != nil || st.Args != nil {
			return errors.New("args, wait, repeat, parallel, same and retry_on apply to call steps only")
		}
		if st.Tools == nil && (st.Expect != nil || st.Capture != nil) {
			return errors.New("expect and capture apply to call and tools steps only")
		}
	}
	if st.Repeat != 0 && st.Parallel != 0 {
		return errors.New("repeat and parallel are exclusive")
	}
	if st.Wait != nil && (st.Repeat != 0 || st.Parallel != 0) {
		return errors.New("wait cannot be combined with repeat or parallel")
	}
	if len(st.Same) > 0 && st.Repeat < 2 && st.Parallel < 2 {
		return errors.New("same needs repeat or parallel of at least 2")
	}
	if st.Tools != nil {
		if st.Expect != nil && (st.Expect.OK != nil || st.Expect.ErrorCode != "" || st.Expect.HintContains != nil) {
			return errors.New("a tools step's expect takes fields only")
		}
		for _, in := range st.Tools.Instances {
			if in.Tool == "" {
				return errors.New("an instance needs a tool")
			}
			if in.Schema != "" && in.Schema != "input" && in.Schema != "output" {
				return fmt.Errorf("instance schema %q: want input or output", in.Schema)
			}
		}
	}
	if err := st.Expect.validate(); err != nil {
		return fmt.Errorf("expect: %w", err)
	}
	if st.Wait != nil {
		if err := st.Wait.Until.validate(); err != nil {
			return fmt.Errorf("wait.until: %w", err)
		}
		if st.Wait.TimeoutMS < 0 || st.Wait.IntervalMS < 0 {
			return errors.New("wait timeout and interval cannot be negative")
		}
	}
	for name, path := range st.Capture {
		if !varNameRE.MatchString(name) {
			return fmt.Errorf("capture name %q: want a letter or _, then letters, digits, _ or dots", name)
		}
		if err := checkPathSyntax(path); err != nil {
			return fmt.Errorf("capture %s: %w", name, err)
		}
	}
	for _, path := range st.Same {
		if err := checkPathSyntax(path); err != nil {
			return fmt.Errorf("same: %w", err)
		}
	}
	return nil
}

func (e *Expect) validate() error {
	if e == nil {
		return nil
	}
	if e.ErrorCode != "" && e.OK != nil && *e.OK {
		return errors.New("ok: true contradicts error_code")
	}
	if len(e.HintContains) > 0 && !e.wantsError() {
		return errors.New("hint_contains needs error_code or ok: false")
	}
	for i, c := range e.Fields {
		if err := checkPathSyntax(c.Path); err != nil {
			return fmt.Errorf("fields[%d]: %w", i, err)
		}
	}
	return nil
}

// checkPathSyntax parses a path unless it holds ${vars}, which are only
// known at run time.
func checkPathSyntax(path string) error {
	if strings.Contains(path, "${") {
		return nil
	}
	_, err := parsePath(path)
	return err
}

// merged returns the pack's setup overridden by the scenario's, with
// defaults filled in.
func merged(pack, sc Setup) Setup {
	out := pack
	out.Files = map[string]string{}
	for k, v := range pack.Files {
		out.Files[k] = v
	}
	for k, v := range sc.Files {
		out.Files[k] = v
	}
	pick := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	pick(&out.Project, sc.Project)
	pick(&out.Repo, sc.Repo)
	pick(&out.SetupScript, sc.SetupScript)
	pick(&out.CleanupScript, sc.CleanupScript)
	out.ServeArgs = append(append([]string(nil), pack.ServeArgs...), sc.ServeArgs...)
	if sc.Attempt != nil {
		out.Attempt = sc.Attempt
	}
	pickInt := func(dst *int, v, def int) {
		if v != 0 {
			*dst = v
		}
		if *dst == 0 {
			*dst = def
		}
	}
	pickInt(&out.TimeoutMS, sc.TimeoutMS, 30000)
	pickInt(&out.IntervalMS, sc.IntervalMS, 30)
	pickInt(&out.CallTimeoutMS, sc.CallTimeoutMS, 60000)
	pickInt(&out.ScenarioTimeoutMS, sc.ScenarioTimeoutMS, 120000)
	if out.Project == "" {
		out.Project = "demo"
	}
	if out.Repo == "" {
		out.Repo = "app"
	}
	if len(out.Files) == 0 {
		out.Files["README.md"] = "# " + out.Repo + "\n"
	}
	return out
}
