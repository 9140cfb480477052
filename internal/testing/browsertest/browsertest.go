// Package browsertest owns the real browser that tests drive pages in: it finds
// the installed Chromium, starts it headless with a throwaway profile (a
// temporary --user-data-dir) for one test, and gives the test pages (tabs)
// with blocking helpers over chromedp — navigate, wait, click, type, press
// keys, read text, evaluate JavaScript, take screenshots — that fail the test
// with a clear message (what was waited for, the page's URL and visible text,
// and its console errors) instead of returning errors. CSS selectors are used
// throughout. It is for tests only.
//
//	b := browsertest.Start(t)
//	p := b.Page(t)
//	p.Go(srv.URL)
//	p.Type("#name", "plugboard")
//	p.Click("button[type=submit]")
//	p.WaitText("#list", "plugboard")
//	if errs := p.ConsoleErrors(); len(errs) > 0 { t.Errorf(...) }
//
// Each Page records the page's console errors: calls of console.error and
// console.assert, uncaught exceptions and unhandled promise rejections, and
// error entries of the browser's log (such as a resource that failed to load,
// a 404 favicon included: pages under test should declare one, for example
// <link rel="icon" href="data:,">). ConsoleErrors returns them, so a test can
// assert that a page logged none.
//
// When no Chromium is installed the tests are skipped, unless the environment
// variable PLUGBOARD_REQUIRE_BROWSER is set (CI sets it): then they fail,
// naming build/install-chromium.sh, which installs Debian's chromium.
//
// The browser never outlives its test: it is closed, and its profile
// directory removed, when the test ends (t.Cleanup); if the test binary dies
// the kernel kills the browser (chromedp starts it with PR_SET_PDEATHSIG), and
// chromedp kills any of its child processes that are left, by their
// --user-data-dir.
//
// The helpers call t.Fatal, so call them from the test's goroutine. For
// anything they do not cover, run chromedp actions on Page.Context.
package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// RequireEnv names the environment variable that turns a missing browser
// from a skip into a failure.
const RequireEnv = "PLUGBOARD_REQUIRE_BROWSER"

// DefaultTimeout is how long a Page's helpers wait before they fail the test,
// unless the Timeout option or Page.SetTimeout says otherwise.
const DefaultTimeout = 15 * time.Second

// startTimeout bounds the browser's start.
const startTimeout = 60 * time.Second

// diagTimeout bounds the look at the page (URL, text) for a failure message.
const diagTimeout = 3 * time.Second

// maxText is how much of the page's visible text a failure message shows.
const maxText = 1500

// Option configures the browser that Start starts.
type Option func(*config)

type config struct {
	width, height int
	mobile        bool
	scale         float64
	timeout       time.Duration
}

// WindowSize sets the browser window's size in CSS pixels (default
// 1280x800).
func WindowSize(width, height int) Option {
	return func(c *config) { c.width, c.height = width, height }
}

// Phone emulates a phone on every page: a 390x844 viewport (an iPhone 12-14's
// size) with device scale factor 3, mobile mode (the meta viewport is
// honoured, scrollbars overlay) and touch events.
func Phone() Option {
	return func(c *config) {
		c.width, c.height = 390, 844
		c.mobile = true
		c.scale = 3
	}
}

// Timeout sets the default timeout of the helpers of every Page (default
// DefaultTimeout).
func Timeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// Browser is a running headless Chromium, closed when the test that started
// it ends.
type Browser struct {
	cfg  config
	bin  string
	ctx  context.Context // the browser's root chromedp context
	proc *os.Process
}

// Binary returns the path of the installed Chromium (chromium,
// chromium-browser or google-chrome in PATH, or /usr/bin/chromium), or "".
func Binary() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if fi, err := os.Stat("/usr/bin/chromium"); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return "/usr/bin/chromium"
	}
	return ""
}

// Installed skips t (or fails it, under PLUGBOARD_REQUIRE_BROWSER) when no
// Chromium is installed, as Start would, without starting one.
func Installed(t testing.TB) {
	t.Helper()
	binary(t)
}

func binary(t testing.TB) string {
	t.Helper()
	if bin := Binary(); bin != "" {
		return bin
	}
	msg := "browsertest: no Chromium found (chromium, chromium-browser or google-chrome in PATH, or /usr/bin/chromium)"
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s, and %s is set; install it with build/install-chromium.sh", msg, RequireEnv)
	}
	t.Skipf("%s; install it with build/install-chromium.sh, set %s=1 to fail instead of skipping", msg, RequireEnv)
	return ""
}

// Start starts a headless Chromium for t, closed (and its profile directory
// removed) when t ends. It skips t when no Chromium is installed, unless
// PLUGBOARD_REQUIRE_BROWSER is set.
func Start(t testing.TB, opts ...Option) *Browser {
	t.Helper()
	bin := binary(t)
	cfg := config{width: 1280, height: 800, scale: 1, timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}

	// chromedp creates the temporary --user-data-dir itself (no UserDataDir
	// option), so that it also removes it, and kills any leftover child
	// processes that still use it, when the browser ends.
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:0:0], chromedp.DefaultExecAllocatorOptions[:]...)
	allocOpts = append(allocOpts,
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox, // needed as root; harmless otherwise
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(cfg.width, cfg.height),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), allocOpts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelBrowser() // closes the browser; waits for it to exit and its directory to go
		cancelAlloc()
	})

	// The first Run starts the browser; it must not run under a timeout
	// (that would end the browser with it), so the start is bounded from
	// outside.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("browsertest: starting %s: %v", bin, err)
		}
	case <-time.After(startTimeout):
		cancelBrowser()
		t.Fatalf("browsertest: %s did not start within %v", bin, startTimeout)
	}
	b := &Browser{cfg: cfg, bin: bin, ctx: ctx}
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil {
		b.proc = c.Browser.Process()
	}
	return b
}

// Binary is the path of the running browser's executable.
func (b *Browser) Binary() string { return b.bin }

// PID is the browser's main process ID (0 if unknown).
func (b *Browser) PID() int {
	if b.proc == nil {
		return 0
	}
	return b.proc.Pid
}

// Page is a browser tab in a browser context of its own (its own cookies and
// storage), closed when the test that opened it ends. Its helpers wait up to
// its timeout and fail the test when that runs out.
type Page struct {
	t       testing.TB
	ctx     context.Context
	timeout time.Duration

	mu      sync.Mutex
	console []string
}

// Page opens a new tab for t, in a fresh browser context (no cookies or
// storage shared with other pages), closed when t ends.
func (b *Browser) Page(t testing.TB) *Page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &Page{t: t, ctx: ctx, timeout: b.cfg.timeout}

	// Listen opens the tab; it sees the events from then on, so every
	// navigation's errors are recorded.
	if err := chromedp.Listen(ctx, p.record); err != nil {
		t.Fatalf("browsertest: opening a page: %v", err)
	}
	if b.cfg.mobile {
		p.do("emulating a phone", chromedp.EmulateViewport(int64(b.cfg.width), int64(b.cfg.height),
			chromedp.EmulateScale(b.cfg.scale), chromedp.EmulateMobile, chromedp.EmulateTouch))
	}
	return p
}

// record is the Listen callback: it runs on chromedp's reading goroutine, so
// it only formats and appends.
func (p *Page) record(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		parts := make([]string, 0, len(e.Args))
		for _, a := range e.Args {
			parts = append(parts, remoteText(a))
		}
		msg = "console." + string(e.Type) + ": " + strings.Join(parts, " ")
		if f := topFrame(e.StackTrace); f != "" {
			msg += " (" + f + ")"
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		if d == nil {
			return
		}
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		} else if d.Exception != nil {
			text += " " + remoteText(d.Exception)
		}
		msg = "exception: " + text
		if d.URL != "" {
			msg += fmt.Sprintf(" (%s:%d:%d)", d.URL, d.LineNumber+1, d.ColumnNumber+1)
		}
	case *cdplog.EventEntryAdded:
		en := e.Entry
		if en == nil || en.Level != cdplog.EntryLevelError {
			return
		}
		msg = "log(" + string(en.Source) + "): " + en.Text
		if en.URL != "" {
			msg += " (" + en.URL + ")"
		}
	default:
		return
	}
	p.mu.Lock()
	p.console = append(p.console, msg)
	p.mu.Unlock()
}

func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if len(o.Value) > 0 {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
		return string(o.Value)
	}
	if o.UnserializableValue != "" {
		return string(o.UnserializableValue)
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Type)
}

func topFrame(st *runtime.StackTrace) string {
	if st == nil || len(st.CallFrames) == 0 {
		return ""
	}
	f := st.CallFrames[0]
	return fmt.Sprintf("%s:%d:%d", f.URL, f.LineNumber+1, f.ColumnNumber+1)
}

// ConsoleErrors returns the errors the page logged so far, oldest first:
// console.error and failed console.assert calls, uncaught exceptions and
// unhandled rejections, and error entries of the browser log (failed loads).
func (p *Page) ConsoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.console...)
}

// Context is the page's chromedp context, for running chromedp actions the
// helpers do not cover (chromedp.Run(p.Context(), ...)).
func (p *Page) Context() context.Context { return p.ctx }

// SetTimeout changes how long the page's helpers wait.
func (p *Page) SetTimeout(d time.Duration) { p.timeout = d }

// Go navigates to url and waits for its load event.
func (p *Page) Go(url string) {
	p.t.Helper()
	p.do("loading "+url, chromedp.Navigate(url))
}

// URL returns the page's current URL.
func (p *Page) URL() string {
	p.t.Helper()
	return run(p, "reading the URL", chromedp.Location())
}

// WaitVisible waits until the element sel matches is visible.
func (p *Page) WaitVisible(sel string) {
	p.t.Helper()
	p.do(fmt.Sprintf("waiting for %q to be visible", sel), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// WaitGone waits until no element matches sel.
func (p *Page) WaitGone(sel string) {
	p.t.Helper()
	p.do(fmt.Sprintf("waiting for %q to be gone", sel), chromedp.WaitNotPresent(chromedp.CSS(sel)))
}

// WaitText waits until the innerText of the element sel matches contains
// substring.
func (p *Page) WaitText(sel, substring string) {
	p.t.Helper()
	const fn = `(sel, sub) => { const e = document.querySelector(sel); return !!e && e.innerText.includes(sub); }`
	_, err := execT(p, chromedp.PollFunction[chromedp.Void](fn,
		chromedp.WithPollingArgs(sel, substring), chromedp.WithPollingTimeout(p.timeout)))
	if err != nil {
		var now string
		if got, ok := p.peek(fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? JSON.stringify(e.innerText) : "no such element"; })()`, jsString(sel))); ok {
			now = " (now: " + trim(got) + ")"
		}
		p.fail(fmt.Sprintf("waiting for %q to contain the text %q%s", sel, substring, now), err)
	}
}

// Click waits until the element sel matches is visible, and clicks its
// center with the mouse.
func (p *Page) Click(sel string) {
	p.t.Helper()
	p.do(fmt.Sprintf("clicking %q", sel), chromedp.Click(chromedp.CSS(sel)))
}

// Type waits until the element sel matches is visible, focuses it and types
// text as key events (appending to what it holds).
func (p *Page) Type(sel, text string) {
	p.t.Helper()
	p.do(fmt.Sprintf("typing %q into %q", text, sel), chromedp.SendKeys(chromedp.CSS(sel), text))
}

// Focus focuses the element sel matches.
func (p *Page) Focus(sel string) {
	p.t.Helper()
	p.do(fmt.Sprintf("focusing %q", sel), chromedp.Focus(chromedp.CSS(sel)))
}

// keyNames are the names Press knows; a key that is not one is typed as it is.
var keyNames = map[string]string{
	"Tab": "\t", "Enter": "\r", "Escape": "\u001b", "Backspace": "\b", "Delete": "\u007f",
	"Space": " ", "ArrowDown": "\u0301", "ArrowLeft": "\u0302", "ArrowRight": "\u0303",
	"ArrowUp": "\u0304", "End": "\u0305", "Home": "\u0306", "PageDown": "\u0307", "PageUp": "\u0308",
}

var modifierNames = map[string]chromedp.Modifier{
	"Shift": chromedp.ModifierShift, "Control": chromedp.ModifierCtrl, "Ctrl": chromedp.ModifierCtrl,
	"Alt": chromedp.ModifierAlt, "Meta": chromedp.ModifierMeta,
}

// Press presses a key on the focused element, for keyboard navigation: a key
// name (Tab, Enter, Escape, Space, Backspace, Delete, ArrowUp, ArrowDown,
// ArrowLeft, ArrowRight, Home, End, PageUp, PageDown) or a character, with
// optional modifiers joined by "+" (Shift+Tab, Control+a).
func (p *Page) Press(key string) {
	p.t.Helper()
	parts := strings.Split(key, "+")
	name := parts[len(parts)-1]
	if name == "" && len(parts) > 1 { // "Control++"
		name = "+"
		parts = parts[:len(parts)-1]
	}
	var mods []chromedp.Modifier
	for _, m := range parts[:len(parts)-1] {
		mod, ok := modifierNames[m]
		if !ok {
			p.t.Fatalf("browsertest: Press(%q): unknown modifier %q (want Shift, Control, Alt or Meta)", key, m)
		}
		mods = append(mods, mod)
	}
	keys := name
	if k, ok := keyNames[name]; ok {
		keys = k
	}
	var opts []chromedp.KeyOption
	if len(mods) > 0 {
		opts = append(opts, chromedp.KeyModifiers(mods...))
	}
	p.do(fmt.Sprintf("pressing %s", key), chromedp.KeyEvent(keys, opts...))
}

// HasFocus reports whether the focused element (document.activeElement)
// matches sel.
func (p *Page) HasFocus(sel string) bool {
	p.t.Helper()
	var ok bool
	p.Eval(fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%s)`, jsString(sel)), &ok)
	return ok
}

// Text waits until the element sel matches is present and returns its
// visible text (innerText).
func (p *Page) Text(sel string) string {
	p.t.Helper()
	return run(p, fmt.Sprintf("reading the text of %q", sel), chromedp.Text(chromedp.CSS(sel)))
}

// Value waits until the form field sel matches is present and returns its
// value.
func (p *Page) Value(sel string) string {
	p.t.Helper()
	return run(p, fmt.Sprintf("reading the value of %q", sel), chromedp.Value(chromedp.CSS(sel)))
}

// Count returns how many elements match sel now (no waiting).
func (p *Page) Count(sel string) int {
	p.t.Helper()
	var n int
	p.Eval(fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(sel)), &n)
	return n
}

// Eval evaluates the JavaScript expression js (awaiting it if it is a
// promise) and decodes its JSON value into out, which may be nil to drop it.
// An exception fails the test.
func (p *Page) Eval(js string, out any) {
	p.t.Helper()
	raw := run(p, "evaluating "+trim(js), chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if out == nil {
		return
	}
	if len(raw) == 0 {
		raw = []byte("null")
	}
	if err := json.Unmarshal(raw, out); err != nil {
		p.t.Fatalf("browsertest: evaluating %s: decoding %s into %T: %v", trim(js), trim(string(raw)), out, err)
	}
}

// Screenshot writes a PNG of the whole page (beyond the viewport) to path,
// creating its directory.
func (p *Page) Screenshot(path string) {
	p.t.Helper()
	png := run(p, "taking a screenshot", chromedp.FullScreenshot(100))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatalf("browsertest: screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("browsertest: screenshot: %v", err)
	}
}

// ClearCookies deletes the cookies of the page's browser context.
func (p *Page) ClearCookies() {
	p.t.Helper()
	p.do("clearing cookies", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.ClearBrowserCookies, cdp.Empty{})
		return err
	}))
}

// do runs a, failing the test with what on an error or timeout.
func (p *Page) do(what string, a chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	run(p, what, a)
}

func run[T any](p *Page, what string, a chromedp.Action[T]) T {
	p.t.Helper()
	v, err := execT(p, a)
	if err != nil {
		p.fail(what, err)
	}
	return v
}

func execT[T any](p *Page, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// fail ends the test with what went wrong and what the page shows.
func (p *Page) fail(what string, err error) {
	p.t.Helper()
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %v (%w)", p.timeout, err)
	}
	url, ok := p.peek(`location.href`)
	if !ok {
		url = "(unknown: " + url + ")"
	}
	text, ok := p.peek(`document.body ? document.body.innerText : ""`)
	if ok {
		text = trim(text)
	} else {
		text = "(unknown: " + text + ")"
	}
	msg := fmt.Sprintf("browsertest: %s: %v\n\tpage URL: %s\n\tpage text: %s", what, err, url, text)
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		msg += "\n\tconsole errors:\n\t\t" + strings.Join(errs, "\n\t\t")
	}
	p.t.Fatal(msg)
}

// peek evaluates a string expression briefly, for a failure message; it
// returns the error's text and false when it cannot.
func (p *Page) peek(js string) (string, bool) {
	if p.ctx.Err() != nil {
		return "page closed", false
	}
	ctx, cancel := context.WithTimeout(p.ctx, diagTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		return err.Error(), false
	}
	return s, true
}

// trim collapses whitespace and shortens s for a message.
func trim(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxText {
		s = string(r[:maxText]) + "…"
	}
	return s
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
