package executor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/host/internal/jsonfile"
)

// Registry holds the profiles a board can launch: the built-ins, overlaid by
// a user file. Profiles are fixed once loaded, so a Registry is safe for
// concurrent use; set LookPath before sharing it.
type Registry struct {
	// LookPath finds a program on PATH to decide Profile.Available; nil
	// means exec.LookPath. Tests and hosts that run agents elsewhere (a
	// container, another PATH) replace it.
	LookPath func(file string) (string, error)

	profiles map[string]Profile
}

// ValidationError says what is wrong with one field of one profile, and in
// which file, so a user can find it.
type ValidationError struct {
	File     string // "" for a built-in
	Executor string // as written, or its index when the id itself is the problem
	Field    string // JSON path within the profile, e.g. "variants.PLAN.argv"
	Reason   string
	// At places the problem in its file — line, column, the field's path
	// from the top of the file — and is what Error prints; nil for a
	// built-in.
	At *jsonfile.Error
}

func (e *ValidationError) Error() string {
	if e.At != nil {
		return e.At.Error()
	}
	src := e.File
	if src == "" {
		src = "built-in profiles"
	}
	return fmt.Sprintf("%s: executor %s: field %s: %s", src, e.Executor, e.Field, e.Reason)
}

// Unwrap returns At, when there is one.
func (e *ValidationError) Unwrap() error {
	if e.At == nil {
		return nil
	}
	return e.At
}

// userFile is the shape of the user's executors file.
type userFile struct {
	Executors []Profile `json:"executors"`
}

var (
	idPattern      = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	outputFormats  = []string{FormatClaudeStreamJSON, FormatCodexJSON, FormatGeminiStreamJSON, FormatOpenCodeJSON, FormatLines}
)

// Load builds a registry from the built-in profiles and then the user file
// at userFile, whose profiles ({"executors":[...]}) are added, or replace a
// built-in of the same id as a whole. userFile "" means there is none; a
// path that does not exist is an error, since a user who names a file
// expects it to be read. Names in the file are normalised as NormalizeName
// does. Every problem in the file is reported at once, each naming the
// file, its line and column, the executor and the field.
func Load(userFile string) (*Registry, error) {
	if userFile == "" {
		return build(nil, nil, nil)
	}
	b, err := os.ReadFile(userFile)
	if err != nil {
		return nil, fmt.Errorf("executor profiles: %w", err)
	}
	return Parse(userFile, b)
}

// Parse builds a registry as Load does from an executors file's content;
// name (the file) starts every error.
func Parse(name string, data []byte) (*Registry, error) {
	doc, err := jsonfile.Parse(name, data)
	if err != nil {
		return nil, err
	}
	return ParseDoc(doc)
}

// ParseDoc builds a registry as Load does from a parsed executors file
// ({"executors": [...]}).
func ParseDoc(doc *jsonfile.Doc) (*Registry, error) {
	// A misspelt field ("varients") would otherwise be dropped silently and
	// the profile would fail later, or worse, run without it.
	var f userFile
	filled, err := doc.Decode(&f)
	if !filled {
		return nil, err
	}
	profiles, _ := doc.Sub("executors")
	return build(profiles, f.Executors, err)
}

// ParseProfiles builds a registry from the built-in profiles and a parsed
// list of profiles ([{"executor": ...}, ...]), as Load does from a file's:
// the executors section of plugboard's configuration file (host/config),
// whose errors then carry that file's positions and paths.
func ParseProfiles(doc *jsonfile.Doc) (*Registry, error) {
	var ps []Profile
	filled, err := doc.Decode(&ps)
	if !filled {
		return nil, err
	}
	return build(doc, ps, err)
}

// build makes a registry of the built-ins overlaid by user profiles, read
// from doc (nil: none); decodeErr is what decoding them reported already.
func build(doc *jsonfile.Doc, user []Profile, decodeErr error) (*Registry, error) {
	r := &Registry{profiles: map[string]Profile{}}
	errs := []error{decodeErr}
	for _, p := range Builtin() {
		p, perrs := normalizeProfile(nil, -1, p)
		errs = append(errs, perrs...)
		r.profiles[p.Executor] = p
	}
	seen := map[string]bool{}
	for i, p := range user {
		p, perrs := normalizeProfile(doc, i, p)
		errs = append(errs, perrs...)
		if len(perrs) > 0 {
			continue
		}
		if seen[p.Executor] {
			errs = append(errs, validationError(doc, i, p.Executor, jsonfile.Path{"executor"}, "defined more than once in this file"))
			continue
		}
		seen[p.Executor] = true
		r.profiles[p.Executor] = p
	}
	if err := jsonfile.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// validationError is the problem with field (a path within profile i of
// doc; nil doc: a built-in).
func validationError(doc *jsonfile.Doc, i int, name string, field jsonfile.Path, reason string) *ValidationError {
	e := &ValidationError{Executor: name, Field: field.String(), Reason: reason}
	if doc != nil {
		e.File = doc.Name()
		e.At = doc.Errorf(append(jsonfile.Path{i}, field...), "executor %s: %s", name, reason)
	}
	return e
}

// normalizeProfile normalises the names in p, profile i of doc (nil: a
// built-in), and checks it, returning every problem found.
func normalizeProfile(doc *jsonfile.Doc, i int, p Profile) (Profile, []error) {
	var errs []error
	bad := func(field jsonfile.Path, format string, args ...any) {
		name := p.Executor
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		errs = append(errs, validationError(doc, i, name, field, fmt.Sprintf(format, args...)))
	}
	f := func(segs ...any) jsonfile.Path { return segs }

	raw := p.Executor
	p.Executor = NormalizeName(p.Executor)
	if !idPattern.MatchString(p.Executor) {
		p.Executor = ""
		bad(f("executor"), "id %q must be letters, digits and '_' and start with a letter (e.g. CLAUDE_CODE)", raw)
	}
	p.Available = false // computed on every hand-out, never trusted from a file
	if strings.TrimSpace(p.Binary) == "" {
		bad(f("binary"), "is empty; name the program to look for on PATH")
	}
	if !slices.Contains(outputFormats, p.OutputFormat) {
		bad(f("output_format"), "unknown format %q (valid: %s)", p.OutputFormat, strings.Join(outputFormats, ", "))
	}

	for _, k := range sortedKeys(p.Env) {
		if !envNamePattern.MatchString(k) {
			bad(f("env", k), "%q is not an environment variable name (letters, digits, '_')", k)
		} else if strings.HasPrefix(k, "PLUGBOARD_") {
			bad(f("env", k), "PLUGBOARD_* variables are the board's own; a profile cannot set them")
		}
		if strings.ContainsRune(p.Env[k], 0) {
			bad(f("env", k), "the value contains a NUL byte")
		}
	}
	if p.InactivityTimeout < 0 {
		bad(f("inactivity_timeout"), "is negative; give a duration such as \"10m\", or leave it out for the board's default")
	}
	if p.RunTimeout < 0 {
		bad(f("run_timeout"), "is negative; give a duration such as \"2h\", or leave it out for the board's default")
	}
	for j, m := range p.ResumeMissing {
		if strings.TrimSpace(m) == "" {
			bad(f("resume_missing", j), "is empty; it would match every failed follow-up")
		}
	}
	for j, st := range p.State {
		if st == "" || filepath.IsAbs(st) || filepath.Clean(st) != st || st == "." || st == ".." ||
			strings.HasPrefix(st, "../") || strings.ContainsRune(st, 0) {
			bad(f("state", j), "%q must be a clean path relative to the home directory, below it (\".claude\", \".config/opencode\")", st)
		}
	}

	if len(p.Variants) == 0 {
		bad(f("variants"), "none defined; a profile needs at least one")
	}
	vs := make(map[string]Variant, len(p.Variants))
	for _, rawName := range sortedKeys(p.Variants) {
		v := p.Variants[rawName]
		name := NormalizeName(rawName)
		field := f("variants", rawName)
		if !idPattern.MatchString(name) {
			bad(field, "variant name %q must be letters, digits and '_' and start with a letter", rawName)
			continue
		}
		if _, dup := vs[name]; dup {
			bad(field, "variant %s is defined more than once", name)
			continue
		}
		checkArgv(bad, field.Join("argv"), v.Argv, v.Stdin, false)
		checkArgv(bad, field.Join("resume"), v.Resume, v.Stdin, true)
		if v.RootRequiresEnv != "" && !envNamePattern.MatchString(v.RootRequiresEnv) {
			bad(field.Join("root_requires_env"), "%q is not an environment variable name", v.RootRequiresEnv)
		}
		if v.Stdin != "" && v.Stdin != StdinPrompt {
			bad(field.Join("stdin"), "unknown value %q (valid: %q, or empty)", v.Stdin, StdinPrompt)
		}
		vs[name] = v
	}
	p.Variants = vs

	if p.DefaultVariant == "" {
		if _, ok := vs[DefaultVariantName]; ok {
			p.DefaultVariant = DefaultVariantName
		}
	}
	p.DefaultVariant = NormalizeName(p.DefaultVariant)
	if _, ok := vs[p.DefaultVariant]; !ok && len(vs) > 0 {
		bad(f("default_variant"), "%q is not among the variants (%s)", p.DefaultVariant, strings.Join(sortedKeys(vs), ", "))
	}
	return p, errs
}

// checkArgv reports an argv that cannot launch anything, or that would leave
// the agent without its prompt.
func checkArgv(bad func(field jsonfile.Path, format string, args ...any), field jsonfile.Path, argv []string, stdin string, optional bool) {
	if len(argv) == 0 {
		if !optional {
			bad(field, "is empty; give the program and its arguments")
		}
		return
	}
	if strings.TrimSpace(argv[0]) == "" {
		bad(field, "argv[0] is empty; it must name the program")
	}
	if stdin != StdinPrompt && !slices.ContainsFunc(argv, func(a string) bool {
		return strings.Contains(a, PlaceholderPrompt)
	}) {
		bad(field, "the prompt goes nowhere: put %s in an argument or set stdin to %q", PlaceholderPrompt, StdinPrompt)
	}
}

// List returns every profile sorted by executor id, with Available set from
// a PATH lookup made now.
func (r *Registry) List() []Profile {
	out := make([]Profile, 0, len(r.profiles))
	for _, id := range sortedKeys(r.profiles) {
		out = append(out, r.handOut(r.profiles[id]))
	}
	return out
}

// Get returns the profile named name (normalised as NormalizeName does, so
// "claude-code" finds CLAUDE_CODE), with Available set from a PATH lookup
// made now.
func (r *Registry) Get(name string) (Profile, bool) {
	p, ok := r.profiles[NormalizeName(name)]
	if !ok {
		return Profile{}, false
	}
	return r.handOut(p), true
}

func (r *Registry) handOut(p Profile) Profile {
	p = p.clone()
	look := r.LookPath
	if look == nil {
		look = exec.LookPath
	}
	_, err := look(p.Binary)
	p.Available = err == nil
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
