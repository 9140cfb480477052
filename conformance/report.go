package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Status is the outcome of one check on one tool (or on the plugin).
type Status string

// Statuses.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	// StatusSkip: the check could not run because an earlier one failed
	// (no manifest, no instance); the message says which.
	StatusSkip Status = "skip"
	// StatusNotApplicable: the check is one of plugboard's own ABI that a
	// hyper-mcp v2 plugin legitimately does not meet (its interface has no
	// such thing); the message says why. It neither passes nor fails.
	StatusNotApplicable Status = "not_applicable"
)

// Result is one check on one tool, or on the whole plugin when Tool is "".
// Several problems found by the same check on the same tool are one result:
// Message is the first, Details the others.
type Result struct {
	ID       string   `json:"id"`
	Tool     string   `json:"tool,omitempty"`
	Severity Severity `json:"severity"`
	Status   Status   `json:"status"`
	// Message says what is wrong (or why the check was skipped).
	Message string `json:"message,omitempty"`
	// Fix says how to fix it.
	Fix     string   `json:"fix,omitempty"`
	Details []string `json:"details,omitempty"`
	// Occurrences counts the problems found, repeats of the same one
	// included (a fuzzed crash found by many instances, say).
	Occurrences int `json:"occurrences,omitempty"`
	// Profile is the profile whose rule this is: base (every MCP plugin)
	// or house (plugboard's agent-UX rules, advice for a plugin not held
	// to them).
	Profile Profile `json:"profile"`

	// keys are the configuration keys a behaviour.config failure names;
	// settings, other settings it names whole (a plain module's
	// plugins.settings.NAME.tools).
	keys     []string
	settings []string
}

// Failed reports whether the result fails the run: an error, or a warning
// under strict. Advice never does.
func (r *Result) Failed(strict bool) bool {
	return r.Status == StatusFail && (r.Severity == SeverityError || r.Severity == SeverityWarning && strict)
}

// PluginReport is every check on one plugin file.
type PluginReport struct {
	File string `json:"file"`
	// HyperV2 is true for a plugin speaking hyper-mcp's v2 interface
	// (list_tools and call_tool, no describe), which the kit checks through
	// that interface: see the results of status not_applicable.
	HyperV2 bool `json:"hyper_v2,omitempty"`
	// Shape is what kind of module the kit saw (nil: not a module).
	Shape *Shape `json:"shape,omitempty"`
	// Profile is the profile the plugin was held to, and ProfileReason
	// why (with --profile auto).
	Profile       Profile `json:"profile,omitempty"`
	ProfileReason string  `json:"profile_reason,omitempty"`
	// Verdict is what a person would say of it.
	Verdict    Verdict  `json:"verdict"`
	Plugin     string   `json:"plugin,omitempty"`
	Version    string   `json:"version,omitempty"`
	Tools      []string `json:"tools"`
	DurationMS int64    `json:"duration_ms"`
	// Calls counts the tool calls the behaviour checks made.
	Calls    int `json:"calls"`
	Checks   int `json:"checks"`
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	// Advice counts house rules a plugin not held to them misses.
	Advice  int `json:"advice"`
	Skipped int `json:"skipped"`
	// NotApplicable counts the results of status not_applicable.
	NotApplicable int      `json:"not_applicable"`
	OK            bool     `json:"ok"`
	Results       []Result `json:"results"`

	duration time.Duration
}

// Report is the outcome of a kit run.
type Report struct {
	ABI    int   `json:"abi"`
	Seed   int64 `json:"seed"`
	Fuzz   int   `json:"fuzz"`
	Strict bool  `json:"strict"`
	// Profile is the --profile asked for (auto: each plugin's own).
	Profile Profile `json:"profile"`
	// Config is the configuration file whose plugins.settings the plugins
	// ran with ("" : none, as serve without one).
	Config string `json:"config,omitempty"`
	// OK: every plugin works (advice, and warnings unless strict, allowed).
	OK bool `json:"ok"`
	// Verdict is the worst plugin's, and ExitCode the command's exit
	// status for it (ExitWorks, ExitBroken, ExitNeedsConfig).
	Verdict  VerdictKind    `json:"verdict"`
	ExitCode int            `json:"exit_code"`
	Checks   int            `json:"checks"`
	Errors   int            `json:"errors"`
	Warnings int            `json:"warnings"`
	Advice   int            `json:"advice"`
	Plugins  []PluginReport `json:"plugins"`
}

// finish counts the results and decides the verdict.
func (p *PluginReport) finish(strict bool) {
	p.Checks, p.Errors, p.Warnings, p.Advice, p.Skipped, p.NotApplicable = len(p.Results), 0, 0, 0, 0, 0
	for _, r := range p.Results {
		switch {
		case r.Status == StatusSkip:
			p.Skipped++
		case r.Status == StatusNotApplicable:
			p.NotApplicable++
		case r.Status != StatusFail:
		case r.Severity == SeverityError:
			p.Errors++
		case r.Severity == SeverityAdvice:
			p.Advice++
		default:
			p.Warnings++
		}
	}
	p.Verdict = p.verdict(strict)
	p.OK = p.Verdict.Kind.rank() <= VerdictAdvice.rank()
	p.DurationMS = p.duration.Milliseconds()
}

// Finish recomputes the totals, with warnings failing the run when strict.
func (r *Report) Finish(strict bool) {
	r.Strict = strict
	r.OK, r.Checks, r.Errors, r.Warnings, r.Advice, r.Verdict = true, 0, 0, 0, 0, VerdictWorks
	for i := range r.Plugins {
		p := &r.Plugins[i]
		p.finish(strict)
		r.Checks += p.Checks
		r.Errors += p.Errors
		r.Warnings += p.Warnings
		r.Advice += p.Advice
		r.OK = r.OK && p.OK
		if p.Verdict.Kind.rank() > r.Verdict.rank() {
			r.Verdict = p.Verdict.Kind
		}
	}
	switch r.Verdict {
	case VerdictBroken:
		r.ExitCode = ExitBroken
	case VerdictNeedsConfig:
		r.ExitCode = ExitNeedsConfig
	default:
		r.ExitCode = ExitWorks
	}
}

// recorder collects the results of one plugin, one per (check, tool).
type recorder struct {
	results []Result
	index   map[[2]string]int
	keys    map[[3]string]bool
	// sdk: the plugin was built with plugboard's SDK, so fixes may name
	// the SDK's helpers (recorder.fix).
	sdk bool
}

// fix is a fix that works with any PDK, followed for a plugin built with
// plugboard's SDK by how the SDK does it.
func (r *recorder) fix(anyPDK, withSDK string) string {
	if r.sdk && withSDK != "" {
		return anyPDK + " (with plugboard's SDK: " + withSDK + ")"
	}
	return anyPDK
}

func newRecorder() *recorder {
	return &recorder{index: map[[2]string]int{}, keys: map[[3]string]bool{}}
}

func (r *recorder) get(id, tool string) *Result {
	k := [2]string{id, tool}
	i, ok := r.index[k]
	if !ok {
		c, known := LookupCheck(id)
		if !known {
			panic("conformance: unknown check id " + id)
		}
		i = len(r.results)
		r.index[k] = i
		profile := ProfileBase
		if houseChecks[id] {
			profile = ProfileHouse
		}
		r.results = append(r.results, Result{ID: id, Tool: tool, Severity: c.Severity, Status: StatusPass, Profile: profile})
	}
	return &r.results[i]
}

// pass records that the check ran; it does not undo a failure.
func (r *recorder) pass(id, tool string) { r.get(id, tool) }

// fail records a problem of the check's own severity.
func (r *recorder) fail(id, tool, message, fix string) {
	c, _ := LookupCheck(id)
	r.problem(id, tool, c.Severity, message, fix)
}

// warn records a problem as a warning whatever the check's severity.
func (r *recorder) warn(id, tool, message, fix string) {
	r.problem(id, tool, SeverityWarning, message, fix)
}

// house records a warning that only plugboard's house rules ask for, in a
// check whose other failures are base rules.
func (r *recorder) house(id, tool, message, fix string) {
	r.problem(id, tool, SeverityWarning, message, fix)
	r.get(id, tool).Profile = ProfileHouse
}

// needsConfig records that a call stopped for configuration the operator
// has not set (keys: those the host names, possibly none).
func (r *recorder) needsConfig(tool string, keys []string, message, fix string) {
	r.failOnce(CheckConfig, tool, strings.Join(keys, "\x00"), message, fix)
	res := r.get(CheckConfig, tool)
	for _, k := range keys {
		if !slices.Contains(res.keys, k) {
			res.keys = append(res.keys, k)
		}
	}
}

// needsSetting records that the plugin cannot be served until the
// operator sets a setting other than a configuration value (setting: its
// path, plugins.settings.NAME.FIELD).
func (r *recorder) needsSetting(tool, setting, message, fix string) {
	r.failOnce(CheckConfig, tool, setting, message, fix)
	res := r.get(CheckConfig, tool)
	if !slices.Contains(res.settings, setting) {
		res.settings = append(res.settings, setting)
	}
}

// failOnce records a problem unless one with the same key was recorded for
// this check and tool: repeats only count as occurrences.
func (r *recorder) failOnce(id, tool, key, message, fix string) {
	c, _ := LookupCheck(id)
	r.problemOnce(id, tool, key, c.Severity, message, fix)
}

// warnOnce is failOnce for a warning.
func (r *recorder) warnOnce(id, tool, key, message, fix string) {
	r.problemOnce(id, tool, key, SeverityWarning, message, fix)
}

func (r *recorder) problemOnce(id, tool, key string, sev Severity, message, fix string) {
	k := [3]string{id, tool, key}
	if r.keys[k] {
		res := r.get(id, tool)
		res.Occurrences++
		return
	}
	r.keys[k] = true
	r.problem(id, tool, sev, message, fix)
}

func (r *recorder) problem(id, tool string, sev Severity, message, fix string) {
	res := r.get(id, tool)
	res.Occurrences++
	if res.Status != StatusFail {
		res.Status, res.Severity, res.Message, res.Fix = StatusFail, sev, message, fix
		return
	}
	if sev == SeverityError && res.Severity != SeverityError {
		// An error outranks the warnings recorded so far: it leads.
		res.Details = append(res.Details, res.Message)
		res.Severity, res.Message, res.Fix = sev, message, fix
		return
	}
	if len(res.Details) < maxDetails {
		res.Details = append(res.Details, message)
	} else if len(res.Details) == maxDetails {
		res.Details = append(res.Details, "… (more problems of this kind not listed)")
	}
}

const maxDetails = 12

// notApplicable records that the check does not apply to this plugin,
// with why, unless it already failed.
func (r *recorder) notApplicable(id, tool, why string) {
	res := r.get(id, tool)
	if res.Status == StatusPass {
		res.Status, res.Message = StatusNotApplicable, why
	}
}

// skip records that the check could not run, unless it already failed.
func (r *recorder) skip(id, tool, why string) {
	res := r.get(id, tool)
	if res.Status == StatusPass {
		res.Status, res.Message = StatusSkip, why
	}
}

// ---- output ----

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteText writes the human report: plugins by verdict, broken first,
// each with its verdict, shape and profile, every failure with its fix
// (errors, then warnings, then advice) and each check that does not apply
// with why; then the totals.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	order := make([]int, len(r.Plugins))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, c int) int {
		return failRank(&r.Plugins[a]) - failRank(&r.Plugins[c])
	})
	for _, i := range order {
		p := &r.Plugins[i]
		failed := failures(p)
		status := "ok  "
		switch p.Verdict.Kind {
		case VerdictBroken:
			status = "FAIL"
		case VerdictNeedsConfig:
			status = "CONF"
		}
		fmt.Fprintf(&b, "%s  %s", status, filepath.Base(p.File))
		iface := ""
		if p.HyperV2 {
			iface = ", hyper-mcp v2"
		}
		if p.Plugin != "" {
			fmt.Fprintf(&b, " (plugin %s, %s%s)", strings.TrimSpace(p.Plugin+" "+p.Version), plural(len(p.Tools), "tool"), iface)
		} else if iface != "" {
			fmt.Fprintf(&b, " (%s)", iface[2:])
		}
		fmt.Fprintf(&b, ": %s, %s, %s", plural(p.Checks, "check"), plural(p.Errors, "error"), plural(p.Warnings, "warning"))
		if p.Advice > 0 {
			fmt.Fprintf(&b, ", %d advice", p.Advice)
		}
		if p.Skipped > 0 {
			fmt.Fprintf(&b, ", %d skipped", p.Skipped)
		}
		if p.NotApplicable > 0 {
			fmt.Fprintf(&b, ", %d not applicable", p.NotApplicable)
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "  verdict: %s\n", p.Verdict.Text)
		if len(p.Verdict.Settings) > 0 {
			fmt.Fprintf(&b, "           set %s in a configuration file and pass it with --config FILE, as serve would read it\n",
				strings.Join(p.Verdict.Settings, " and "))
		}
		if p.Shape != nil {
			fmt.Fprintf(&b, "  shape:   %s\n", p.Shape.Text)
		}
		if p.Profile != "" {
			fmt.Fprintf(&b, "  profile: %s\n", profileLine(p))
		}
		for _, res := range failed {
			where := ""
			if res.Tool != "" {
				where = res.Tool + ": "
			}
			times := ""
			if res.Occurrences > 1+len(res.Details) {
				times = fmt.Sprintf(" [%d occurrences]", res.Occurrences)
			}
			fmt.Fprintf(&b, "  %-7s  %-32s %s%s%s\n", res.Severity, res.ID, where, res.Message, times)
			for _, d := range res.Details {
				fmt.Fprintf(&b, "  %-7s  %-32s   also: %s\n", "", "", d)
			}
			if res.Fix != "" {
				fmt.Fprintf(&b, "  %-7s  %-32s   fix: %s\n", "", "", res.Fix)
			}
		}
		for _, res := range p.Results {
			if res.Status == StatusNotApplicable {
				where := ""
				if res.Tool != "" {
					where = res.Tool + ": "
				}
				fmt.Fprintf(&b, "  %-7s  %-32s %s%s\n", "n/a", res.ID, where, res.Message)
			}
		}
		b.WriteString("\n")
	}
	verdict := "ok"
	switch r.Verdict {
	case VerdictBroken:
		verdict = "FAIL"
	case VerdictNeedsConfig:
		verdict = "needs configuration"
	}
	fmt.Fprintf(&b, "conformance: %s, %s: %s, %s", plural(len(r.Plugins), "plugin"), plural(r.Checks, "check"),
		plural(r.Errors, "error"), plural(r.Warnings, "warning"))
	if r.Advice > 0 {
		fmt.Fprintf(&b, ", %d advice", r.Advice)
	}
	fmt.Fprintf(&b, " — %s\n", verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// profileLine says which profile a plugin was held to, and why.
func profileLine(p *PluginReport) string {
	why := p.ProfileReason
	if why == "" {
		why = "as --profile asked"
	}
	if p.Profile == ProfileHouse {
		return "house (plugboard's agent-UX rules are rules): " + why
	}
	return "base (plugboard's agent-UX rules are advice; --profile house holds it to them): " + why
}

func failRank(p *PluginReport) int {
	return VerdictBroken.rank() - p.Verdict.Kind.rank()
}

// failures returns the failed results, errors first, then warnings, then
// advice, in check order.
func failures(p *PluginReport) []Result {
	var out []Result
	for _, r := range p.Results {
		if r.Status == StatusFail {
			out = append(out, r)
		}
	}
	rank := func(s Severity) int {
		switch s {
		case SeverityError:
			return 0
		case SeverityWarning:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b Result) int { return rank(a.Severity) - rank(b.Severity) })
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ProgressLine is the one-line summary of a plugin printed while the kit
// runs, e.g. "tasks-read.wasm: 10 tools, 212 checks … ok (3.1s)".
func (p *PluginReport) ProgressLine() string {
	verdict := "ok"
	switch {
	case p.Verdict.Kind == VerdictBroken:
		verdict = fmt.Sprintf("FAIL (%s, %s)", plural(p.Errors, "error"), plural(p.Warnings, "warning"))
	case p.Verdict.Kind == VerdictNeedsConfig:
		verdict = p.Verdict.Text
	case p.Warnings > 0 && p.Advice > 0:
		verdict = fmt.Sprintf("ok (%s, %d advice)", plural(p.Warnings, "warning"), p.Advice)
	case p.Warnings > 0:
		verdict = fmt.Sprintf("ok (%s)", plural(p.Warnings, "warning"))
	case p.Advice > 0:
		verdict = fmt.Sprintf("ok (%d advice)", p.Advice)
	}
	return fmt.Sprintf("%s: %s, %s … %s (%.1fs)", filepath.Base(p.File), plural(len(p.Tools), "tool"),
		plural(p.Checks, "check"), verdict, p.duration.Seconds())
}

// JUnit XML: one testsuite per plugin, one testcase per check and tool.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string `xml:"name,attr"`
	File     string `xml:"file,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
	// Properties carry the verdict, the shape and the profile.
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML. A failed check is a
// <failure> when it fails the run (an error, or a warning under --strict;
// a plugin stopping for configuration is one of type
// needs_configuration); other warnings and advice are passing test cases
// whose <system-out> carries them, so CI dashboards show them without
// failing the build. Each suite's properties give the plugin's verdict
// (verdict, verdict_text), shape and profile.
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Name: "plugboard conformance"}
	var total time.Duration
	for _, p := range r.Plugins {
		name := p.Plugin
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(p.File), ".wasm")
		}
		s := junitSuite{Name: name, File: p.File, Time: seconds(p.duration), Properties: []junitProperty{
			{"verdict", string(p.Verdict.Kind)}, {"verdict_text", p.Verdict.Text}, {"profile", string(p.Profile)}}}
		if p.Shape != nil {
			s.Properties = append(s.Properties, junitProperty{"shape", p.Shape.Interface}, junitProperty{"shape_text", p.Shape.Text})
		}
		for _, res := range p.Results {
			tc := junitCase{Name: res.ID, ClassName: "conformance." + name}
			if res.Tool != "" {
				tc.Name = res.ID + "/" + res.Tool
			}
			text := res.Message
			for _, d := range res.Details {
				text += "\nalso: " + d
			}
			if res.Fix != "" {
				text += "\nfix: " + res.Fix
			}
			switch {
			case res.Status == StatusSkip, res.Status == StatusNotApplicable:
				tc.Skipped = &junitMessage{Message: res.Message}
				s.Skipped++
			case res.Failed(r.Strict):
				kind := string(res.Severity)
				if res.ID == CheckConfig {
					kind = string(VerdictNeedsConfig)
				}
				tc.Failure = &junitMessage{Message: res.Message, Type: kind, Text: text}
				s.Failures++
			case res.Status == StatusFail:
				tc.SystemOut = strings.ToUpper(string(res.Severity)) + ": " + text
			}
			s.Cases = append(s.Cases, tc)
		}
		s.Tests = len(s.Cases)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Skipped += s.Skipped
		total += p.duration
		out.Suites = append(out.Suites, s)
	}
	out.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
