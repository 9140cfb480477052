package executor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Output formats a profile may declare; each names the normaliser that reads
// the agent's output (see NewNormalizer).
const (
	// FormatClaudeStreamJSON is Claude Code's `--output-format stream-json
	// --verbose` event stream. Amp, Qwen Code and Cursor Agent emit the same
	// envelope, so they share it. Each format names its own normaliser.
	FormatClaudeStreamJSON = "claude-stream-json"
	// FormatCodexJSON is the JSONL event stream of `codex exec --json`.
	FormatCodexJSON = "codex-json"
	// FormatGeminiStreamJSON is Gemini CLI's `--output-format stream-json`
	// (init, message, tool_use, tool_result, error, result events).
	FormatGeminiStreamJSON = "gemini-stream-json"
	// FormatOpenCodeJSON is the JSON event stream of `opencode run --format
	// json` (step_start, text, tool_use, step_finish, error events).
	FormatOpenCodeJSON = "opencode-json"
	// FormatLines records each output line as it is; the fallback for
	// agents whose stream has no normaliser of its own.
	FormatLines = "lines"
)

// Placeholders a variant's argv may contain. They are replaced in one pass,
// so a prompt that happens to contain "{agent_session_id}" stays as written.
const (
	PlaceholderPrompt         = "{prompt}"
	PlaceholderAgentSessionID = "{agent_session_id}"
)

// StdinPrompt as a variant's Stdin means the prompt is written to the
// process's stdin, which is then closed.
const StdinPrompt = "prompt"

// DefaultVariantName is assumed when a profile names no default variant.
const DefaultVariantName = "DEFAULT"

// Profile says how to launch one coding agent.
type Profile struct {
	Executor       string             `json:"executor"` // SCREAMING_SNAKE_CASE id: CLAUDE_CODE, SHELL...
	Description    string             `json:"description,omitempty"`
	Binary         string             `json:"binary"` // program looked up on PATH for availability
	DefaultVariant string             `json:"default_variant"`
	Variants       map[string]Variant `json:"variants"` // keys like DEFAULT, PLAN, APPROVALS
	SupportsMCP    bool               `json:"supports_mcp"`
	OutputFormat   string             `json:"output_format"` // one of the Format* constants
	// Env is set in the agent's environment on top of what the host passes
	// on (a CLI's switch for unattended use, a notice to silence). The
	// operator's own --agent-env entries win over it.
	Env map[string]string `json:"env,omitempty"`
	// VerifiedWith names the CLI release this profile's flags, resume line
	// and output format were checked against ("@google/gemini-cli 0.61.0").
	VerifiedWith string `json:"verified_with,omitempty"`
	// InactivityTimeout ends a run as failed when the agent makes no
	// progress for this long: no output but warnings and retry notices.
	// Zero means the board's default.
	InactivityTimeout Duration `json:"inactivity_timeout,omitempty"`
	// RunTimeout ends a run as failed once it has run this long. Zero means
	// the board's default.
	RunTimeout Duration `json:"run_timeout,omitempty"`
	// ResumeMissing lists texts the CLI prints when the agent session a
	// follow-up resumes does not exist (it never saved a turn). A resumed
	// run that fails with one of them is run again fresh, with the
	// conversation so far as its prompt.
	ResumeMissing []string `json:"resume_missing,omitempty"`
	// State lists the CLI's own state under the home directory, as paths
	// relative to it (".claude", ".config/opencode", ".claude.json"): its
	// login, settings, sessions and caches. The attempt sandbox lets the
	// agent read and write these and nothing else of the home directory;
	// a directory is created when missing, a file is granted when it
	// exists. Paths must be relative, clean and stay below the home
	// directory.
	State []string `json:"state,omitempty"`
	// Available is computed by the Registry from a PATH lookup of Binary
	// each time a profile is handed out; a value read from a file is ignored.
	Available bool `json:"available"`
}

// Variant is the launch command for one variant. Argv elements may contain
// the placeholders {prompt} and {agent_session_id}. Stdin, when "prompt",
// means the prompt is written to stdin (then closed).
type Variant struct {
	Argv []string `json:"argv"`
	// Resume is the argv for a follow-up that resumes the agent's own
	// session; empty means the CLI cannot resume, so a follow-up starts
	// fresh with Argv.
	Resume []string `json:"resume,omitempty"`
	Stdin  string   `json:"stdin,omitempty"`
	// RootRequiresEnv names a variable that must be set in the agent's
	// environment for this variant to run as root: the CLI refuses to run
	// it as root otherwise (Claude Code's --dangerously-skip-permissions
	// and IS_SANDBOX). The board refuses such a start at once, naming the
	// setting, instead of letting the CLI fail with its bare refusal.
	RootRequiresEnv string `json:"root_requires_env,omitempty"`
}

// Duration is a time.Duration written in JSON as a Go duration string
// ("90s", "10m", "2h").
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string; a bare number is refused, since
// nobody can tell whether it meant seconds or nanoseconds. null leaves d as
// it is (encoding/json's convention).
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or \"10m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: write it like \"90s\", \"10m\" or \"2h\"", s)
	}
	*d = Duration(v)
	return nil
}

// NormalizeName turns a user-typed executor or variant name into its id:
// trimmed, '-' as '_', upper case, so "claude-code" names CLAUDE_CODE.
func NormalizeName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_"))
}

// Variant resolves a variant name, normalised as NormalizeName does; ""
// means the profile's default. It returns the resolved name with the
// variant, or an error that lists the valid names.
func (p Profile) Variant(name string) (string, Variant, error) {
	key := NormalizeName(name)
	if key == "" {
		key = NormalizeName(p.DefaultVariant)
	}
	if v, ok := p.Variants[key]; ok {
		return key, v, nil
	}
	return "", Variant{}, fmt.Errorf("executor %s has no variant %q (valid: %s)",
		p.Executor, name, strings.Join(p.VariantNames(), ", "))
}

// VariantNames lists the profile's variant names, sorted.
func (p Profile) VariantNames() []string {
	names := make([]string, 0, len(p.Variants))
	for n := range p.Variants {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Command builds the argv for one run of variant, and the text to write to
// its stdin ("" for none). A non-empty agentSessionID selects the variant's
// Resume argv when it has one; a CLI that cannot resume gets Argv, and the
// follow-up starts a fresh agent session. The returned argv is a new slice:
// argv[0] is the program, looked up on PATH by whoever runs it.
func (p Profile) Command(variant Variant, prompt, agentSessionID string) (argv []string, stdin string) {
	src := variant.Argv
	if agentSessionID != "" && len(variant.Resume) > 0 {
		src = variant.Resume
	}
	// One pass over each element: a replacement's text is never rescanned,
	// so neither value can smuggle in the other placeholder.
	r := strings.NewReplacer(PlaceholderPrompt, prompt, PlaceholderAgentSessionID, agentSessionID)
	argv = make([]string, len(src))
	for i, a := range src {
		argv[i] = r.Replace(a)
	}
	if variant.Stdin == StdinPrompt {
		stdin = prompt
	}
	return argv, stdin
}

// clone returns a deep copy, so a profile handed out cannot change the
// registry's own.
func (p Profile) clone() Profile {
	vs := make(map[string]Variant, len(p.Variants))
	for k, v := range p.Variants {
		v.Argv, v.Resume = slices.Clone(v.Argv), slices.Clone(v.Resume)
		vs[k] = v
	}
	p.Variants = vs
	p.Env = maps.Clone(p.Env)
	p.ResumeMissing = slices.Clone(p.ResumeMissing)
	p.State = slices.Clone(p.State)
	return p
}
