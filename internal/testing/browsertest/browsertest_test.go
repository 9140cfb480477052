package browsertest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const formPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>form</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>body { font-family: sans-serif; margin: 2em; } li { padding: .2em; }</style>
</head><body>
<h1>Items</h1>
<form id="add">
  <label for="item">New item</label>
  <input id="item" name="item" autocomplete="off">
  <button id="submit" type="submit">Add</button>
</form>
<ul id="list"></ul>
<script>
document.getElementById("add").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = document.getElementById("item");
  const li = document.createElement("li");
  li.textContent = input.value;
  document.getElementById("list").appendChild(li);
  input.value = "";
});
</script>
</body></html>`

const errorPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>broken</title><link rel="icon" href="data:,"></head>
<body><p id="msg">broken page</p>
<script>
console.log("just a log");
console.error("something failed:", 42);
throw new Error("boom from the page");
</script></body></html>`

// serve serves html at / of a 127.0.0.1 server closed when t ends.
func serve(t *testing.T, html string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, html)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

func TestFormPage(t *testing.T) {
	url := serve(t, formPage)
	b := Start(t)
	p := b.Page(t)

	p.Go(url)
	p.WaitVisible("label[for=item]")
	if got := p.Text("label[for=item]"); got != "New item" {
		t.Errorf("label text = %q, want %q", got, "New item")
	}
	var width int
	p.Eval(`window.innerWidth`, &width)
	if width != 1280 {
		t.Errorf("window.innerWidth = %d, want 1280", width)
	}

	p.Type("#item", "first thing")
	p.Click("#submit")
	p.WaitText("#list", "first thing")
	if n := p.Count("#list li"); n != 1 {
		t.Errorf("%d list items, want 1", n)
	}
	if v := p.Value("#item"); v != "" {
		t.Errorf("input value after submit = %q, want empty", v)
	}

	// Keyboard only: Tab from the input reaches the button, Enter submits.
	p.Type("#item", "second thing")
	if !p.HasFocus("#item") {
		t.Error("the input is not focused after typing into it")
	}
	p.Press("Tab")
	if !p.HasFocus("#submit") {
		t.Error("Tab from the input did not focus the button")
	}
	p.Press("Shift+Tab")
	if !p.HasFocus("#item") {
		t.Error("Shift+Tab from the button did not focus the input")
	}
	p.Press("Enter") // submits the form from the input
	p.WaitText("#list li:nth-child(2)", "second thing")
	if n := p.Count("#list li"); n != 2 {
		t.Errorf("%d list items, want 2", n)
	}
	var items []string
	p.Eval(`[...document.querySelectorAll("#list li")].map(li => li.textContent)`, &items)
	if strings.Join(items, "|") != "first thing|second thing" {
		t.Errorf("items = %q", items)
	}

	shot := filepath.Join(t.TempDir(), "shots", "form.png")
	p.Screenshot(shot)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("screenshot is not a PNG: % x", data[:min(8, len(data))])
	}
	if len(data) < 5000 {
		t.Errorf("screenshot is only %d bytes", len(data))
	}
	t.Logf("screenshot: %d bytes", len(data))

	p.ClearCookies()
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

func TestConsoleErrors(t *testing.T) {
	url := serve(t, errorPage)
	b := Start(t)
	p := b.Page(t)
	p.Go(url)
	p.WaitVisible("#msg")

	// The events can trail the load event by a moment.
	deadline := time.Now().Add(5 * time.Second)
	for len(p.ConsoleErrors()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	errs := p.ConsoleErrors()
	joined := strings.Join(errs, "\n")
	if len(errs) != 2 || !strings.Contains(joined, "something failed: 42") || !strings.Contains(joined, "boom from the page") {
		t.Fatalf("console errors = %q, want the console.error call and the uncaught exception", errs)
	}
	if strings.Contains(joined, "just a log") {
		t.Errorf("console.log recorded as an error: %q", errs)
	}

	// A second page of the same browser starts with no errors.
	if errs := b.Page(t).ConsoleErrors(); len(errs) != 0 {
		t.Errorf("new page has console errors %q", errs)
	}
}

func TestPhone(t *testing.T) {
	url := serve(t, formPage)
	b := Start(t, Phone())
	p := b.Page(t)
	p.Go(url)
	var got struct {
		W, H int
		DPR  float64
		Mob  bool
	}
	p.Eval(`({W: window.innerWidth, H: window.innerHeight, DPR: window.devicePixelRatio, Mob: matchMedia("(pointer: coarse)").matches})`, &got)
	if got.W != 390 || got.H != 844 || got.DPR != 3 || !got.Mob {
		t.Errorf("phone viewport = %+v, want 390x844 at DPR 3 with a coarse pointer", got)
	}
	p.Screenshot(filepath.Join(t.TempDir(), "phone.png"))
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends the
// goroutine, as t.Fatal does, without failing the real test.
type fatalRecorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *fatalRecorder) Fatal(args ...any) {
	r.mu.Lock()
	r.msg = fmt.Sprint(args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }

func TestFailureMessage(t *testing.T) {
	url := serve(t, errorPage)
	b := Start(t, Timeout(time.Second))
	rec := &fatalRecorder{TB: t}
	p := b.Page(rec)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		p.Go(url)
		p.WaitText("#msg", "never there")
	}()
	<-done
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the 1s wait took %v", d)
	}
	for _, want := range []string{
		`waiting for "#msg" to contain the text "never there" (now: "broken page")`,
		"timed out after 1s",
		"page URL: " + url,
		"page text: broken page",
		"boom from the page",
	} {
		if !strings.Contains(rec.msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, rec.msg)
		}
	}
}

// TestCrashedBinaryLeavesNoBrowser runs a test binary that starts a browser
// and exits without its cleanups, as a crash would, and checks that none of
// the browser's processes survive it.
func TestCrashedBinaryLeavesNoBrowser(t *testing.T) {
	if os.Getenv("BROWSERTEST_CRASH_CHILD") != "" {
		b := Start(t)
		b.Page(t).Go("about:blank")
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.PID()))
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			if strings.HasPrefix(arg, "--user-data-dir=") {
				fmt.Println("DIR", strings.TrimPrefix(arg, "--user-data-dir="))
			}
		}
		fmt.Println("PID", b.PID())
		os.Exit(3)
	}
	Installed(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashedBinaryLeavesNoBrowser$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BROWSERTEST_CRASH_CHILD=1")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var pid int
	var dir string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PID "); ok {
			pid, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "DIR "); ok {
			dir = v
		}
	}
	if pid == 0 || dir == "" {
		t.Fatalf("child printed no PID and DIR:\n%s", out)
	}
	// chromedp's own cleanup did not run, so the profile directory stays.
	t.Cleanup(func() { os.RemoveAll(dir) })

	var left []int
	deadline := time.Now().Add(10 * time.Second)
	for {
		left = processesUsing(dir)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("browser processes %v (main %d) outlived the crashed binary", left, pid)
	}
}

// processesUsing lists the processes with --user-data-dir=dir in their command
// line, skipping zombies.
func processesUsing(dir string) []int {
	want := "--user-data-dir=" + dir
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(want)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
