package executor_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/internal/board/executor"
)

var builtinIDs = []string{
	"AMP", "CLAUDE_CODE", "CODEX", "COPILOT", "CURSOR_AGENT", "DROID", "GEMINI", "OPENCODE", "QWEN_CODE", "SHELL",
}

func mustLoad(t *testing.T, userFile string) *executor.Registry {
	t.Helper()
	r, err := executor.Load(userFile)
	if err != nil {
		t.Fatalf("Load(%q): %v", userFile, err)
	}
	return r
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "executors.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every built-in must load, name a default variant it has, and deliver the
// prompt to its agent in every variant, fresh or resumed.
func TestBuiltinsAreValid(t *testing.T) {
	r := mustLoad(t, "")
	var ids []string
	for _, p := range r.List() {
		ids = append(ids, p.Executor)
		if _, _, err := p.Variant(""); err != nil {
			t.Errorf("%s: default variant: %v", p.Executor, err)
		}
		if p.Description == "" || p.Binary == "" {
			t.Errorf("%s: description or binary empty", p.Executor)
		}
		for name, v := range p.Variants {
			const prompt, sid = "-fix the bug", "sess-123"
			for _, resumed := range []bool{false, true} {
				id := ""
				if resumed {
					id = sid
				}
				argv, stdin := p.Command(v, prompt, id)
				if argv[0] != p.Binary {
					t.Errorf("%s/%s: argv[0] = %q, want the binary %q", p.Executor, name, argv[0], p.Binary)
				}
				inArgv := slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, prompt) })
				if stdin != prompt && !inArgv {
					t.Errorf("%s/%s resumed=%v: prompt delivered nowhere: argv %q stdin %q", p.Executor, name, resumed, argv, stdin)
				}
				if stdin == prompt && inArgv {
					t.Errorf("%s/%s: prompt delivered twice", p.Executor, name)
				}
				if resumed && len(v.Resume) > 0 && !slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, sid) }) {
					t.Errorf("%s/%s: resume argv %q lacks the session id", p.Executor, name, argv)
				}
				for _, a := range argv {
					if strings.Contains(a, "{prompt}") || strings.Contains(a, "{agent_session_id}") {
						t.Errorf("%s/%s: placeholder left in %q", p.Executor, name, argv)
					}
				}
			}
		}
	}
	if !slices.Equal(ids, builtinIDs) {
		t.Errorf("List ids = %v, want %v", ids, builtinIDs)
	}
	if len(executor.Builtin()) != len(builtinIDs) {
		t.Errorf("Builtin() has %d profiles, want %d", len(executor.Builtin()), len(builtinIDs))
	}
}

// The command lines the board will run, pinned: a change here is a change
// to how an agent is launched and should be deliberate.
func TestBuiltinCommandLines(t *testing.T) {
	r := mustLoad(t, "")
	const prompt = "fix it"
	tests := []struct {
		executor, variant, session string
		argv                       []string
		stdin                      string
	}{
		{"SHELL", "", "", []string{"bash", "-c", prompt}, ""},
		{"SHELL", "", "s1", []string{"bash", "-c", prompt}, ""},
		{"claude-code", "", "", []string{"claude", "-p", "--output-format=stream-json", "--verbose", "--dangerously-skip-permissions"}, prompt},
		{"claude-code", "", "s1", []string{"claude", "-p", "--output-format=stream-json", "--verbose", "--dangerously-skip-permissions", "--resume=s1"}, prompt},
		{"CLAUDE_CODE", "plan", "", []string{"claude", "-p", "--output-format=stream-json", "--verbose", "--permission-mode=plan"}, prompt},
		{"CLAUDE_CODE", "approvals", "", []string{"claude", "-p", "--output-format=stream-json", "--verbose", "--permission-mode=manual"}, prompt},
		{"codex", "", "", []string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "-"}, prompt},
		{"codex", "", "t1", []string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "resume", "t1", "-"}, prompt},
		{"codex", "plan", "", []string{"codex", "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "-"}, prompt},
		{"gemini", "", "", []string{"gemini", "--output-format", "stream-json", "--skip-trust", "--approval-mode", "yolo"}, prompt},
		{"gemini", "", "g1", []string{"gemini", "--output-format", "stream-json", "--skip-trust", "--approval-mode", "yolo", "--resume", "g1"}, prompt},
		{"amp", "", "", []string{"amp", "--execute", "--stream-json", "--dangerously-allow-all"}, prompt},
		{"amp", "", "T-1", []string{"amp", "threads", "continue", "T-1", "--execute", "--stream-json", "--dangerously-allow-all"}, prompt},
		{"opencode", "", "", []string{"opencode", "run", "--format", "json", "--print-logs", "--log-level", "WARN", "--auto"}, prompt},
		{"opencode", "", "ses_1", []string{"opencode", "run", "--format", "json", "--print-logs", "--log-level", "WARN", "--auto", "--session", "ses_1"}, prompt},
		{"opencode", "plan", "", []string{"opencode", "run", "--format", "json", "--print-logs", "--log-level", "WARN", "--agent", "plan"}, prompt},
		{"cursor-agent", "", "c1", []string{"cursor-agent", "-p", "--output-format=stream-json", "--force", "--resume=c1"}, prompt},
		{"qwen-code", "plan", "", []string{"qwen", "--output-format", "stream-json", "--approval-mode", "plan"}, prompt},
		{"copilot", "", "", []string{"copilot", "--prompt=" + prompt, "--allow-all-tools", "--no-color"}, ""},
		{"copilot", "", "c2", []string{"copilot", "--resume=c2", "--prompt=" + prompt, "--allow-all-tools", "--no-color"}, ""},
		{"droid", "", "d1", []string{"droid", "exec", "--output-format", "stream-json", "--auto", "high", "--session-id", "d1"}, prompt},
	}
	for _, tt := range tests {
		p, ok := r.Get(tt.executor)
		if !ok {
			t.Fatalf("Get(%q) found nothing", tt.executor)
		}
		_, v, err := p.Variant(tt.variant)
		if err != nil {
			t.Fatal(err)
		}
		argv, stdin := p.Command(v, prompt, tt.session)
		if !slices.Equal(argv, tt.argv) || stdin != tt.stdin {
			t.Errorf("%s/%s session %q:\n got %q stdin %q\nwant %q stdin %q", tt.executor, tt.variant, tt.session, argv, stdin, tt.argv, tt.stdin)
		}
	}
}

func TestShellProfile(t *testing.T) {
	p, _ := mustLoad(t, "").Get("shell")
	if p.SupportsMCP || p.OutputFormat != executor.FormatLines || p.Binary != "bash" || !slices.Equal(p.VariantNames(), []string{"DEFAULT"}) {
		t.Errorf("SHELL = %+v", p)
	}
}

func TestLoadUserFileAddsAndReplaces(t *testing.T) {
	path := writeFile(t, `{"executors": [
		{"executor": "claude-code", "binary": "my-claude", "default_variant": "fast",
		 "output_format": "claude-stream-json", "supports_mcp": true, "available": true,
		 "variants": {"fast": {"argv": ["my-claude", "-p", "{prompt}"]}}},
		{"executor": " my-agent ", "binary": "agent", "output_format": "lines",
		 "variants": {"DEFAULT": {"argv": ["agent"], "stdin": "prompt"},
		              "read-only": {"argv": ["agent", "--ro"], "resume": ["agent", "--ro", "--resume", "{agent_session_id}"], "stdin": "prompt"}}}
	]}`)
	r := mustLoad(t, path)
	r.LookPath = func(string) (string, error) { return "", errors.New("not found") }

	if n := len(r.List()); n != len(builtinIDs)+1 {
		t.Errorf("List has %d profiles, want %d", n, len(builtinIDs)+1)
	}
	claude, _ := r.Get("CLAUDE_CODE")
	if claude.Binary != "my-claude" || claude.DefaultVariant != "FAST" || !slices.Equal(claude.VariantNames(), []string{"FAST"}) {
		t.Errorf("replaced CLAUDE_CODE = %+v", claude)
	}
	if claude.Available {
		t.Error("available was read from the file; it must only come from the PATH lookup")
	}
	mine, ok := r.Get("my_agent")
	if !ok {
		t.Fatal("added MY_AGENT not found")
	}
	if mine.Executor != "MY_AGENT" || mine.DefaultVariant != "DEFAULT" {
		t.Errorf("MY_AGENT = %+v (default variant should default to DEFAULT)", mine)
	}
	name, v, err := mine.Variant("Read-Only")
	if err != nil || name != "READ_ONLY" {
		t.Fatalf("Variant(Read-Only) = %q, %v", name, err)
	}
	argv, stdin := mine.Command(v, "go", "s9")
	if !slices.Equal(argv, []string{"agent", "--ro", "--resume", "s9"}) || stdin != "go" {
		t.Errorf("Command = %q, %q", argv, stdin)
	}
	// Built-ins the file does not mention are untouched.
	if codex, _ := r.Get("codex"); codex.Binary != "codex" {
		t.Errorf("CODEX changed: %+v", codex)
	}
}

func TestLoadErrors(t *testing.T) {
	valid := `"binary": "x", "output_format": "lines", "variants": {"DEFAULT": {"argv": ["x", "{prompt}"]}}`
	tests := []struct {
		name, content string
		want          []string // each must appear in the error
	}{
		{"unknown output format",
			`{"executors":[{"executor":"A","binary":"x","output_format":"xml","variants":{"DEFAULT":{"argv":["x","{prompt}"]}}}]}`,
			[]string{"executor A", "output_format", `"xml"`}},
		{"default variant not among variants",
			`{"executors":[{"executor":"A","default_variant":"fast",` + valid + `}]}`,
			[]string{"executor A", "default_variant", `"FAST"`, "DEFAULT"}},
		{"no default variant and no DEFAULT",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"PLAN":{"argv":["x","{prompt}"]}}}]}`,
			[]string{"executor A", "default_variant"}},
		{"empty argv",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"DEFAULT":{"argv":[]}}}]}`,
			[]string{"executor A", "variants.DEFAULT.argv", "empty"}},
		{"empty program",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"DEFAULT":{"argv":[" ","{prompt}"]}}}]}`,
			[]string{"executor A", "variants.DEFAULT.argv", "argv[0]"}},
		{"bad id",
			`{"executors":[{"executor":"my agent!",` + valid + `}]}`,
			[]string{"executor #0", ":1:27: executors[0].executor:", `"my agent!"`}},
		{"empty id",
			`{"executors":[{"executor":"",` + valid + `}]}`,
			[]string{"executor #0", "executor"}},
		{"empty binary",
			`{"executors":[{"executor":"A","binary":"","output_format":"lines","variants":{"DEFAULT":{"argv":["x","{prompt}"]}}}]}`,
			[]string{"executor A", "binary"}},
		{"no variants",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines"}]}`,
			[]string{"executor A", "variants", "none"}},
		{"bad stdin",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"DEFAULT":{"argv":["x"],"stdin":"file"}}}]}`,
			[]string{"executor A", "variants.DEFAULT.stdin", `"file"`}},
		{"prompt goes nowhere",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"DEFAULT":{"argv":["x"]}}}]}`,
			[]string{"executor A", "variants.DEFAULT.argv", "prompt goes nowhere"}},
		{"resume loses the prompt",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"DEFAULT":{"argv":["x","{prompt}"],"resume":["x","-r","{agent_session_id}"]}}}]}`,
			[]string{"executor A", "variants.DEFAULT.resume", "prompt goes nowhere"}},
		{"bad variant name",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"DEFAULT":{"argv":["x","{prompt}"]},"no way":{"argv":["x","{prompt}"]}}}]}`,
			[]string{"executor A", "variants.no way"}},
		{"duplicate variant after normalising",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"DEFAULT":{"argv":["x","{prompt}"]},"plan":{"argv":["x","{prompt}"]},"PLAN":{"argv":["x","{prompt}"]}}}]}`,
			[]string{"executor A", "PLAN", "more than once"}},
		{"duplicate executor",
			`{"executors":[{"executor":"A",` + valid + `},{"executor":"a",` + valid + `}]}`,
			[]string{"executor A", "more than once"}},
		{"unknown field",
			`{"executors":[{"executor":"A","varients":{},` + valid + `}]}`,
			[]string{"varients"}},
		{"bad env name",
			`{"executors":[{"executor":"A","env":{"NO WAY":"1"},` + valid + `}]}`,
			[]string{"executor A", "env.NO WAY"}},
		{"env sets a board variable",
			`{"executors":[{"executor":"A","env":{"PLUGBOARD_DATA":"/x"},` + valid + `}]}`,
			[]string{"executor A", "env.PLUGBOARD_DATA", "board's own"}},
		{"negative timeout",
			`{"executors":[{"executor":"A","inactivity_timeout":"-1s",` + valid + `}]}`,
			[]string{"executor A", "inactivity_timeout", "negative"}},
		{"timeout as a number",
			`{"executors":[{"executor":"A","run_timeout":600,` + valid + `}]}`,
			[]string{"duration is a string"}},
		{"timeout misspelt",
			`{"executors":[{"executor":"A","run_timeout":"10 minutes",` + valid + `}]}`,
			[]string{`"10 minutes"`}},
		{"empty resume_missing text",
			`{"executors":[{"executor":"A","resume_missing":[" "],` + valid + `}]}`,
			[]string{"executor A", "resume_missing[0]", "every failed follow-up"}},
		{"bad root_requires_env",
			`{"executors":[{"executor":"A","binary":"x","output_format":"lines","variants":{"DEFAULT":{"argv":["x","{prompt}"],"root_requires_env":"A=B"}}}]}`,
			[]string{"executor A", "variants.DEFAULT.root_requires_env"}},
		{"malformed JSON", `{"executors":[`, []string{"executors.json"}},
		{"trailing data", `{"executors":[]} {}`, []string{"after the top-level object"}},
		{"several problems at once",
			`{"executors":[{"executor":"A","binary":"","output_format":"xml","variants":{"DEFAULT":{"argv":["x","{prompt}"]}}}]}`,
			[]string{"binary", "output_format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			_, err := executor.Load(path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			msg := err.Error()
			for _, w := range append([]string{path}, tt.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}

func TestLoadErrorIsValidationError(t *testing.T) {
	path := writeFile(t, `{"executors":[{"executor":"A","binary":"x","output_format":"xml","variants":{"DEFAULT":{"argv":["x","{prompt}"]}}}]}`)
	_, err := executor.Load(path)
	var ve *executor.ValidationError
	if !errors.As(err, &ve) || ve.File != path || ve.Executor != "A" || ve.Field != "output_format" {
		t.Fatalf("err = %#v, want a ValidationError for A.output_format in %s", err, path)
	}
	if ve.At == nil || ve.At.Line != 1 || ve.At.Col != 60 || ve.At.Path != "executors[0].output_format" {
		t.Fatalf("placed at %+v, want line 1, column 60, executors[0].output_format", ve.At)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.json")
	_, err := executor.Load(path)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load(missing) = %v, want a not-exist error naming the path", err)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"claude-code":    "CLAUDE_CODE",
		"  Claude-Code ": "CLAUDE_CODE",
		"CLAUDE_CODE":    "CLAUDE_CODE",
		"cursor-agent":   "CURSOR_AGENT",
		"plan":           "PLAN",
		"":               "",
		"\tqwen-code\n":  "QWEN_CODE",
	} {
		if got := executor.NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
	r := mustLoad(t, "")
	for _, name := range []string{"claude-code", "Claude_Code", " CLAUDE-CODE "} {
		if p, ok := r.Get(name); !ok || p.Executor != "CLAUDE_CODE" {
			t.Errorf("Get(%q) = %q, %v", name, p.Executor, ok)
		}
	}
	if _, ok := r.Get("claude code"); ok {
		t.Error(`Get("claude code") found a profile; spaces are not separators`)
	}
}

func TestVariantResolution(t *testing.T) {
	p, _ := mustLoad(t, "").Get("CLAUDE_CODE")
	tests := []struct{ in, want string }{
		{"", "DEFAULT"}, {"plan", "PLAN"}, {" Plan ", "PLAN"}, {"approvals", "APPROVALS"}, {"DEFAULT", "DEFAULT"},
	}
	for _, tt := range tests {
		name, v, err := p.Variant(tt.in)
		if err != nil || name != tt.want || !slices.Equal(v.Argv, p.Variants[tt.want].Argv) {
			t.Errorf("Variant(%q) = %q, %v", tt.in, name, err)
		}
	}
	_, _, err := p.Variant("yolo")
	if err == nil || !strings.Contains(err.Error(), `"yolo"`) || !strings.Contains(err.Error(), "APPROVALS, DEFAULT, PLAN") {
		t.Errorf("Variant(yolo) error = %v, want it to name the valid variants", err)
	}
}

func TestCommandSubstitution(t *testing.T) {
	var p executor.Profile
	v := executor.Variant{
		Argv:   []string{"agent", "--msg={prompt}!", "{prompt}{prompt}"},
		Resume: []string{"agent", "--resume", "id={agent_session_id}", "{prompt}"},
	}
	tests := []struct {
		name, prompt, session string
		want                  []string
	}{
		{"fresh", "hi", "", []string{"agent", "--msg=hi!", "hihi"}},
		{"resume", "hi", "s1", []string{"agent", "--resume", "id=s1", "hi"}},
		// One pass: text put in by one placeholder is never expanded again.
		{"prompt holding a placeholder", "say {agent_session_id}", "s1", []string{"agent", "--resume", "id=s1", "say {agent_session_id}"}},
		{"session holding a placeholder", "hi", "{prompt}", []string{"agent", "--resume", "id={prompt}", "hi"}},
	}
	for _, tt := range tests {
		argv, stdin := p.Command(v, tt.prompt, tt.session)
		if !slices.Equal(argv, tt.want) || stdin != "" {
			t.Errorf("%s: Command = %q, %q; want %q", tt.name, argv, stdin, tt.want)
		}
	}

	// A CLI that cannot resume starts fresh even when a session is known.
	noResume := executor.Variant{Argv: []string{"agent"}, Stdin: executor.StdinPrompt}
	argv, stdin := p.Command(noResume, "hi", "s1")
	if !slices.Equal(argv, []string{"agent"}) || stdin != "hi" {
		t.Errorf("no resume: Command = %q, %q", argv, stdin)
	}
	argv[0] = "changed"
	if noResume.Argv[0] != "agent" {
		t.Error("Command's argv aliases the variant's")
	}
}

func TestAvailability(t *testing.T) {
	r := mustLoad(t, "")
	var asked []string
	r.LookPath = func(file string) (string, error) {
		asked = append(asked, file)
		if file == "claude" || file == "bash" {
			return "/usr/bin/" + file, nil
		}
		return "", errors.New("executable file not found in $PATH")
	}
	for _, p := range r.List() {
		want := p.Executor == "CLAUDE_CODE" || p.Executor == "SHELL"
		if p.Available != want {
			t.Errorf("%s: Available = %v, want %v", p.Executor, p.Available, want)
		}
	}
	if !slices.Contains(asked, "cursor-agent") || !slices.Contains(asked, "qwen") {
		t.Errorf("LookPath asked for %v, want each profile's binary", asked)
	}
	if p, _ := r.Get("claude-code"); !p.Available {
		t.Error("Get does not compute Available")
	}
	if p, _ := r.Get("codex"); p.Available {
		t.Error("CODEX available without its binary")
	}
}

func TestProfilesAreCopies(t *testing.T) {
	r := mustLoad(t, "")
	p, _ := r.Get("CODEX")
	p.Variants["DEFAULT"].Argv[0] = "evil"
	delete(p.Variants, "PLAN")
	again, _ := r.Get("CODEX")
	if again.Variants["DEFAULT"].Argv[0] != "codex" || len(again.Variants) != 2 {
		t.Errorf("registry changed through a returned profile: %+v", again.Variants)
	}
}

// The profiles checked against their real CLI (conformance/agents) say
// which release, and how that CLI reports a session it cannot resume.
func TestVerifiedProfiles(t *testing.T) {
	r := mustLoad(t, "")
	for _, id := range []string{"CLAUDE_CODE", "CODEX", "GEMINI", "OPENCODE", "QWEN_CODE"} {
		p, _ := r.Get(id)
		if p.VerifiedWith == "" || len(p.ResumeMissing) == 0 {
			t.Errorf("%s: verified_with %q, resume_missing %q", id, p.VerifiedWith, p.ResumeMissing)
		}
	}
	p, _ := r.Get("CLAUDE_CODE")
	if p.Variants["DEFAULT"].RootRequiresEnv != "IS_SANDBOX" {
		t.Errorf("CLAUDE_CODE DEFAULT does not say the CLI refuses root without IS_SANDBOX")
	}
}
