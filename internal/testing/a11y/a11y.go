// Package a11y owns the accessibility check of the browser tests: axe-core
// (pinned by package-lock.json beside this file, installed by install.sh into
// .cache/a11y with `npm ci`, only when the lockfile changed) injected into a
// browsertest.Page and run against the page as it stands, for the WCAG 2.0
// and 2.1 A and AA rules and axe's best practices. It is for tests only.
//
//	p.Go(base + "#/review")
//	p.WaitVisible("[data-approve]")
//	a11y.RequireClean(t, p, "review")
//
// RequireClean fails the test on every violation of impact serious or
// critical, naming the rule, what it asks for and the elements (CSS
// selectors) that break it, and logs the moderate and minor ones; Check
// returns them all.
//
// axe-core is injected through the DevTools protocol (Runtime.evaluate, the
// page's Eval), which the page's Content-Security-Policy does not govern: the
// check needs no change to the page and no script-src exception. It sees the
// page's DOM at the moment it runs, so run it after waiting for what the view
// shows.
//
// When axe-core cannot be installed (no npm, no registry) the test is
// skipped, unless PLUGBOARD_REQUIRE_BROWSER is set (CI sets it): then it
// fails, as a missing Chromium does in browsertest.
package a11y

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/internal/testing/browsertest"
)

// Version is the axe-core release package-lock.json pins.
const Version = "4.14.1"

// DefaultTags are the axe rule tags Check runs unless the Tags option says
// otherwise: WCAG 2.0 and 2.1 at levels A and AA, and axe's best practices.
var DefaultTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"}

// installTimeout bounds `npm ci` of one package.
const installTimeout = 5 * time.Minute

// Violation is one axe rule the page breaks, with every element that breaks
// it.
type Violation struct {
	ID          string `json:"id"`     // the rule, e.g. "image-alt"
	Impact      string `json:"impact"` // "minor", "moderate", "serious" or "critical"
	Description string `json:"description"`
	Help        string `json:"help"`    // what the rule asks for, in a sentence
	HelpURL     string `json:"helpUrl"` // the rule's page at Deque University
	Nodes       []Node `json:"nodes"`
}

// Node is one element that breaks a rule.
type Node struct {
	// Target is the element's CSS selector, one per frame or shadow root on
	// the way to it (a single one for an element of the page itself).
	Target []string `json:"target"`
	// HTML is the element's opening markup, as axe shortens it.
	HTML string `json:"html"`
	// FailureSummary says what is wrong with this element and how to fix
	// it ("Fix any of the following: …").
	FailureSummary string `json:"failureSummary"`
}

// Blocking reports whether RequireClean fails a test on v: impact serious or
// critical.
func (v Violation) Blocking() bool { return v.Impact == "serious" || v.Impact == "critical" }

// Option changes what Check runs.
type Option func(*config)

type config struct {
	tags     []string
	disabled []string
	include  string
}

// Tags runs the rules of these axe tags instead of DefaultTags.
func Tags(tags ...string) Option { return func(c *config) { c.tags = tags } }

// DisableRules leaves out the rules with these ids (e.g. "region"); say why
// where it is used.
func DisableRules(ids ...string) Option {
	return func(c *config) { c.disabled = append(c.disabled, ids...) }
}

// Within checks only the elements under the first element the CSS selector
// matches, instead of the whole document.
func Within(selector string) Option { return func(c *config) { c.include = selector } }

var install struct {
	once   sync.Once
	source string
	err    error
}

// Source returns axe.min.js of the pinned axe-core, installing it on first
// use. It skips t when it cannot be installed, or fails it under
// PLUGBOARD_REQUIRE_BROWSER.
func Source(t testing.TB) string {
	t.Helper()
	install.once.Do(func() { install.source, install.err = installAxe() })
	if install.err != nil {
		msg := fmt.Sprintf("a11y: installing axe-core %s: %v", Version, install.err)
		if os.Getenv(browsertest.RequireEnv) != "" {
			t.Fatalf("%s\n(%s is set; internal/testing/a11y/install.sh installs it with npm from the npm registry)", msg, browsertest.RequireEnv)
		}
		t.Skipf("%s\n(internal/testing/a11y/install.sh installs it with npm; set %s=1 to fail instead of skipping)", msg, browsertest.RequireEnv)
	}
	return install.source
}

// installAxe runs install.sh beside this file and reads the axe.min.js it
// installed.
func installAxe() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("no source location for install.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(filepath.Dir(file), "install.sh"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v\n%s", err, strings.TrimSpace(stderr.String()))
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		return "", err
	}
	return string(src), nil
}

// Check runs axe-core on the page as it stands and returns the rules it
// breaks (none: an empty slice). It injects axe-core first when the page
// has none (a navigation drops it). It skips t when axe-core cannot be
// installed, unless PLUGBOARD_REQUIRE_BROWSER is set.
func Check(t testing.TB, p *browsertest.Page, opts ...Option) []Violation {
	t.Helper()
	cfg := config{tags: DefaultTags}
	for _, o := range opts {
		o(&cfg)
	}
	src := Source(t)

	var present bool
	p.Eval(`typeof window.axe === "object" && typeof window.axe.run === "function"`, &present)
	if !present {
		var version string
		p.Eval("(() => {\n"+src+"\n;return window.axe.version; })()", &version)
		if version != Version {
			t.Fatalf("a11y: the injected axe-core says version %q, want %s", version, Version)
		}
	}

	options := map[string]any{
		"runOnly":     map[string]any{"type": "tag", "values": cfg.tags},
		"resultTypes": []string{"violations"},
	}
	if len(cfg.disabled) > 0 {
		rules := map[string]any{}
		for _, id := range cfg.disabled {
			rules[id] = map[string]bool{"enabled": false}
		}
		options["rules"] = rules
	}
	scope := "document"
	if cfg.include != "" {
		scope = "{include: [" + jsonValue(cfg.include) + "]}"
	}
	// Targets inside frames or shadow roots are arrays of selectors; they
	// come back as a list of strings either way.
	js := `axe.run(` + scope + `, ` + jsonValue(options) + `).then(r => r.violations.map(v => ({
	id: v.id, impact: v.impact || "", description: v.description, help: v.help, helpUrl: v.helpUrl,
	nodes: v.nodes.map(n => ({
		target: n.target.map(s => Array.isArray(s) ? s.join(" >>> ") : String(s)),
		html: n.html, failureSummary: n.failureSummary || ""}))})))`
	violations := []Violation{}
	p.Eval(js, &violations)
	return violations
}

// RequireClean runs Check and fails t (without stopping it) when the page
// breaks a rule of impact serious or critical, listing each with its rule
// id, impact, what it asks for and every element's selector and failure
// summary; the moderate and minor ones are logged. label names the view in
// the messages ("board", "review").
func RequireClean(t testing.TB, p *browsertest.Page, label string, opts ...Option) {
	t.Helper()
	var blocking, other []Violation
	for _, v := range Check(t, p, opts...) {
		if v.Blocking() {
			blocking = append(blocking, v)
		} else {
			other = append(other, v)
		}
	}
	if len(other) > 0 {
		t.Logf("a11y: %s: %d moderate or minor axe-core %s violations:\n%s", label, len(other), Version, Format(other))
	}
	if len(blocking) > 0 {
		t.Errorf("a11y: %s: %d serious or critical axe-core %s violations:\n%s", label, len(blocking), Version, Format(blocking))
	}
}

// Format lists violations one element a line, for a test's message:
//
//	image-alt (critical): Images must have alternative text
//	    https://dequeuniversity.com/rules/axe/4.14/image-alt?application=axeAPI
//	    at #logo <img id="logo" src="logo.png">: Fix any of the following: Element does not have an alt attribute; …
func Format(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s (%s): %s\n      %s\n", v.ID, v.Impact, v.Help, v.HelpURL)
		for _, n := range v.Nodes {
			fmt.Fprintf(&b, "      at %s %s: %s\n", strings.Join(n.Target, " "), shorten(oneLine(n.HTML), 160), oneLine(n.FailureSummary))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// shorten cuts s to n runes, marking the cut.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// jsonValue is v as a JavaScript literal.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and maps of strings only
	}
	return string(b)
}

// oneLine joins the lines of axe's failure summary ("Fix any of the
// following:\n  Element has …\n  Element has …") into one, its items apart
// by semicolons.
func oneLine(s string) string {
	var out strings.Builder
	for _, l := range strings.Split(s, "\n") {
		l = strings.Join(strings.Fields(l), " ")
		switch {
		case l == "":
			continue
		case out.Len() == 0:
		case strings.HasSuffix(out.String(), ":"):
			out.WriteString(" ")
		default:
			out.WriteString("; ")
		}
		out.WriteString(l)
	}
	return out.String()
}
