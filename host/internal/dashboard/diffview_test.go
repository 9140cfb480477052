package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/a11y"
	"github.com/plugboard/plugboard/internal/testing/browsertest"
)

// diffPatch commits a small tree, changes it and returns what `git diff`
// says about the change: main.go modified in two hunks, "docs/new file.py"
// added (a path with a space, no newline at its end), gone.txt deleted,
// "old name.md" renamed, logo.bin (binary) modified and big.js (350 lines)
// added.
func diffPatch(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "core.autocrlf=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mainGo := func(greet string, big []string) string {
		lines := []string{"package main", "", `import "fmt"`, "", "func main() {", greet, "}"}
		for n := 8; n <= 60; n++ {
			if n == 51 {
				lines = append(lines, big...)
				continue
			}
			lines = append(lines, fmt.Sprintf("// filler %d", n))
		}
		return strings.Join(lines, "\n") + "\n"
	}
	git("init", "-q", ".")
	write("main.go", mainGo("\tfmt.Println(\"hello\")", []string{"var big = 1"}))
	write("gone.txt", "bye\nsee you\n")
	write("old name.md", "# Notes\n\nNothing changes here.\n")
	write("logo.bin", "\x00\x01\x02binary\x00")
	git("add", "-A")
	git("commit", "-q", "-m", "before")

	write("main.go", mainGo("\tfmt.Println(\"hi\", 42) // greet", []string{"var big = `first", "second`"}))
	write("docs/new file.py", "def greet(name):\n    \"\"\"Say hi.\"\"\"\n    return 'hi ' + name  # friendly")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "old name.md"), filepath.Join(dir, "new name.md")); err != nil {
		t.Fatal(err)
	}
	write("logo.bin", "\x00\x03\x02binary!\x00")
	var big strings.Builder
	for n := 1; n <= 350; n++ {
		fmt.Fprintf(&big, "const v%d = %d;\n", n, n)
	}
	write("big.js", big.String())
	git("add", "-A")
	git("commit", "-q", "-m", "after")
	return git("diff", "--no-color", "-M", "HEAD~1", "HEAD")
}

type pdLine struct {
	Kind string `json:"kind"`
	Old  *int   `json:"old"`
	New  *int   `json:"new"`
	Text string `json:"text"`
}

type pdHunk struct {
	Header   string   `json:"header"`
	OldStart int      `json:"oldStart"`
	NewStart int      `json:"newStart"`
	Lines    []pdLine `json:"lines"`
}

type pdFile struct {
	Path      string   `json:"path"`
	OldPath   *string  `json:"oldPath"`
	Status    string   `json:"status"`
	Binary    bool     `json:"binary"`
	Added     int      `json:"added"`
	Deleted   int      `json:"deleted"`
	Hunks     []pdHunk `json:"hunks"`
	Truncated bool     `json:"truncated"`
}

type pdComment struct {
	Path string `json:"path"`
	Side string `json:"side"`
	Line int    `json:"line"`
	Text string `json:"text"`
	Code string `json:"code"`
}

// lineNums reads a hunk's lines as "old|new|kind", empty for no number.
func lineNums(h pdHunk) []string {
	var out []string
	num := func(n *int) string {
		if n == nil {
			return ""
		}
		return fmt.Sprint(*n)
	}
	for _, l := range h.Lines {
		out = append(out, num(l.Old)+"|"+num(l.New)+"|"+l.Kind)
	}
	return out
}

// TestDiffView drives diffview.js (window.PlugboardDiff) in the dashboard's
// own page, served by the dashboard, on a patch real git made: parsing,
// both layouts, syntax colours, paging, line comments through the UI, the
// feedback text, and axe's accessibility rules.
func TestDiffView(t *testing.T) {
	browsertest.Installed(t)
	patch := diffPatch(t)
	d := New(Options{
		Local: &abi.Caller{ID: "local", Role: "SUPERVISOR"},
		Tools: func(*abi.Caller) []Tool { return nil },
		Call: func(context.Context, *abi.Caller, string, json.RawMessage) (json.RawMessage, *abi.Envelope) {
			return nil, abi.NewEnvelope(abi.CodeUnavailable, "not in this test", "the test serves the page only")
		},
	})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)

	p := browsertest.Start(t).Page(t)
	p.Go(srv.URL + "/")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var ready bool
		p.Eval(`typeof window.PlugboardDiff === "object" && document.readyState === "complete"`, &ready)
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("window.PlugboardDiff is not defined: index.html must load /ui/diffview.js")
		}
	}
	patchJS, _ := json.Marshal(patch)
	p.Eval(`window.pdPatch = `+string(patchJS)+`; true`, nil)

	// parse
	var files []pdFile
	p.Eval(`PlugboardDiff.parse(pdPatch)`, &files)
	byPath := map[string]pdFile{}
	var paths []string
	for _, f := range files {
		byPath[f.Path] = f
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, ","); got != "big.js,docs/new file.py,gone.txt,logo.bin,main.go,new name.md" {
		t.Fatalf("parse: files %s\n%s", got, patch)
	}
	type summary struct {
		status         string
		binary         bool
		added, deleted int
		hunks          int
		oldPath        string
	}
	for path, want := range map[string]summary{
		"big.js":           {"added", false, 350, 0, 1, ""},
		"docs/new file.py": {"added", false, 3, 0, 1, ""},
		"gone.txt":         {"deleted", false, 0, 2, 1, ""},
		"logo.bin":         {"modified", true, 0, 0, 0, ""},
		"main.go":          {"modified", false, 3, 2, 2, ""},
		"new name.md":      {"renamed", false, 0, 0, 0, "old name.md"},
	} {
		f := byPath[path]
		got := summary{f.Status, f.Binary, f.Added, f.Deleted, len(f.Hunks), ""}
		if f.OldPath != nil {
			got.oldPath = *f.OldPath
		}
		if got != want || f.Truncated {
			t.Errorf("parse %s: %+v (truncated %v), want %+v", path, got, f.Truncated, want)
		}
	}
	mainGo := byPath["main.go"]
	if h := mainGo.Hunks; len(h) == 2 {
		if !strings.HasPrefix(h[0].Header, "@@ -3,7 +3,7 @@") || h[0].OldStart != 3 || h[0].NewStart != 3 ||
			!strings.HasPrefix(h[1].Header, "@@ -48,7 +48,8 @@") || h[1].OldStart != 48 || h[1].NewStart != 48 {
			t.Errorf("main.go hunks: %q %d %d, %q %d %d", h[0].Header, h[0].OldStart, h[0].NewStart, h[1].Header, h[1].OldStart, h[1].NewStart)
		}
		want0 := []string{"3|3|ctx", "4|4|ctx", "5|5|ctx", "6||del", "|6|add", "7|7|ctx", "8|8|ctx", "9|9|ctx"}
		want1 := []string{"48|48|ctx", "49|49|ctx", "50|50|ctx", "51||del", "|51|add", "|52|add", "52|53|ctx", "53|54|ctx", "54|55|ctx"}
		if got := lineNums(h[0]); !reflect.DeepEqual(got, want0) {
			t.Errorf("main.go hunk 1 lines %v, want %v", got, want0)
		}
		if got := lineNums(h[1]); !reflect.DeepEqual(got, want1) {
			t.Errorf("main.go hunk 2 lines %v, want %v", got, want1)
		}
		if l := h[0].Lines[4]; l.Text != "\tfmt.Println(\"hi\", 42) // greet" {
			t.Errorf("main.go line 6: %q", l.Text)
		}
	}
	py := byPath["docs/new file.py"]
	if got := lineNums(py.Hunks[0]); !reflect.DeepEqual(got, []string{"|1|add", "|2|add", "|3|add", "||meta"}) ||
		py.Hunks[0].Lines[3].Text != `\ No newline at end of file` {
		t.Errorf("new file.py lines %v %+v", got, py.Hunks[0].Lines)
	}
	// CRLF reads the same; a patch cut in main.go's second hunk keeps what
	// came before, says truncated, and throws nothing.
	var robust struct {
		CRLF    bool     `json:"crlf"`
		Paths   []string `json:"paths"`
		Cut     bool     `json:"cut"`
		Lines   int      `json:"lines"`
		Garbage int      `json:"garbage"`
	}
	p.Eval(`(() => {
		const a = JSON.stringify(PlugboardDiff.parse(pdPatch)), b = JSON.stringify(PlugboardDiff.parse(pdPatch.replace(/\n/g, "\r\n")));
		const cut = PlugboardDiff.parse(pdPatch.slice(0, pdPatch.indexOf("+second") + 3));
		const m = cut.find((f) => f.path === "main.go");
		return {crlf: a === b, paths: cut.map((f) => f.path), cut: m.truncated, lines: m.hunks[1].lines.length,
			garbage: PlugboardDiff.parse("not a patch\n@@ nonsense").length};
	})()`, &robust)
	if !robust.CRLF || strings.Join(robust.Paths, ",") != "big.js,docs/new file.py,gone.txt,logo.bin,main.go" || !robust.Cut || robust.Lines != 6 || robust.Garbage != 0 {
		t.Errorf("robustness: %+v", robust)
	}

	// render, unified
	p.Eval(`(() => {
		window.pdT = {comments: [], changes: 0};
		const box = document.createElement("section");
		box.id = "pd-test";
		box.setAttribute("aria-label", "Diff under test");
		for (const f of PlugboardDiff.parse(pdPatch)) box.append(PlugboardDiff.render(f, {mode: "unified", comments: pdT.comments, onChange: () => pdT.changes++}));
		document.body.append(box);
		window.pdRows = (path) => [...document.querySelectorAll('#pd-test section.pd-file[data-path="' + path + '"] tbody tr')].map((r) =>
			[...r.cells].map((c) => c.classList.contains("pd-num") ? (c.querySelector(".pd-n") || {textContent: ""}).textContent : c.textContent).join("|"));
		window.pdTokens = (path) => [...document.querySelectorAll('#pd-test section.pd-file[data-path="' + path + '"] [class^="pd-tok-"]')].map((s) => s.className + ":" + s.textContent);
		return true;
	})()`, nil)
	main := `#pd-test section.pd-file[data-path="main.go"]`
	rows := func(path string) []string {
		t.Helper()
		var r []string
		p.Eval(`pdRows(`+jsString(path)+`)`, &r)
		return r
	}
	if p.Count(main+" table.pd-diff.pd-unified caption.pd-sr") != 1 || p.Count(main+` th[scope="col"]`) != 3 {
		t.Errorf("unified main.go: no caption or column headers")
	}
	wantUnified := []string{
		"3|3| import \"fmt\"", "4|4| ", "5|5| func main() {", "6||-\tfmt.Println(\"hello\")", "|6|+\tfmt.Println(\"hi\", 42) // greet",
		"7|7| }", "8|8| // filler 8", "9|9| // filler 9",
	}
	wantUnified2 := []string{
		"48|48| // filler 48", "49|49| // filler 49", "50|50| // filler 50", "51||-var big = 1", "|51|+var big = `first", "|52|+second`",
		"52|53| // filler 52", "53|54| // filler 53", "54|55| // filler 54",
	}
	checkRows := func(what string, got []string, want1, want2 []string) {
		t.Helper()
		if len(got) != 2+len(want1)+len(want2) || !strings.HasPrefix(got[0], "@@ -3,7 +3,7 @@") ||
			!reflect.DeepEqual(got[1:1+len(want1)], want1) || !strings.HasPrefix(got[1+len(want1)], "@@ -48,7 +48,8 @@") ||
			!reflect.DeepEqual(got[2+len(want1):], want2) {
			t.Errorf("%s rows:\n%s\nwant:\n%s\n%s", what, strings.Join(got, "\n"), strings.Join(want1, "\n"), strings.Join(want2, "\n"))
		}
	}
	checkRows("unified main.go", rows("main.go"), wantUnified, wantUnified2)
	var toks []string
	p.Eval(`pdTokens("main.go")`, &toks)
	for _, want := range []string{"pd-tok-kw:import", `pd-tok-str:"fmt"`, "pd-tok-kw:func", `pd-tok-str:"hi"`, "pd-tok-num:42",
		"pd-tok-com:// greet", "pd-tok-com:// filler 8", "pd-tok-kw:var", "pd-tok-num:1", "pd-tok-str:`first", "pd-tok-str:second`"} {
		if !slices.Contains(toks, want) {
			t.Errorf("main.go tokens lack %s: %v", want, toks)
		}
	}
	p.Eval(`pdTokens("docs/new file.py")`, &toks)
	for _, want := range []string{"pd-tok-kw:def", "pd-tok-kw:return", "pd-tok-str:'hi '", "pd-tok-com:# friendly", `pd-tok-str:"""`} {
		if !slices.Contains(toks, want) {
			t.Errorf("new file.py tokens lack %s: %v", want, toks)
		}
	}
	if v := p.Text(`#pd-test section.pd-file[data-path="logo.bin"]`); !strings.Contains(v, "Binary file") {
		t.Errorf("logo.bin shows %q", v)
	}
	if v := p.Text(`#pd-test section.pd-file[data-path="new name.md"]`); !strings.Contains(v, "old name.md → new name.md") || !strings.Contains(v, "renamed") {
		t.Errorf("the rename shows %q", v)
	}

	// paging: 300 of big.js's 350 lines, then the rest.
	big := `#pd-test section.pd-file[data-path="big.js"]`
	if n := p.Count(big + " tbody tr:not(.pd-hunk)"); n != 300 {
		t.Errorf("big.js builds %d lines at first, want 300", n)
	}
	if v := p.Text(big + " button.pd-more"); v != "Show 50 more lines (50 left)" {
		t.Errorf("big.js more button: %q", v)
	}
	p.Click(big + " button.pd-more")
	if n := p.Count(big + " tbody tr:not(.pd-hunk)"); n != 350 || p.Count(big+" button.pd-more:not([hidden])") != 0 {
		t.Errorf("big.js after more: %d lines, button shown %d", n, p.Count(big+" button.pd-more:not([hidden])"))
	}
	if r := rows("big.js"); len(r) != 351 || r[350] != "|350|+const v350 = 350;" {
		t.Errorf("big.js last row %q", r[len(r)-1])
	}

	// Line comments through the page: by mouse on the new side, on the old
	// side, and by keyboard.
	comment := func(sel, label, text string, keyboard bool) {
		t.Helper()
		btn := sel + ` button.pd-add-comment[aria-label="` + label + `"]`
		if keyboard {
			p.Focus(btn)
			p.Press("Enter")
		} else {
			p.Click(btn)
		}
		ta := sel + ` textarea[aria-label="` + label + `"]`
		p.WaitVisible(ta)
		if !p.HasFocus(ta) {
			t.Errorf("the comment form on %s does not take the focus", label)
		}
		p.Type(ta, text)
		p.Click(sel + " tr.pd-form-row button.pd-save")
		p.WaitGone(sel + " tr.pd-form-row")
		if keyboard && !p.HasFocus(btn) {
			t.Errorf("after Save the focus is not back on %s's button", label)
		}
		if v := p.Text(sel + " tbody"); !strings.Contains(v, text) {
			t.Errorf("the comment %q is not shown under its line", text)
		}
	}
	comment(main, "Comment on main.go line 6", "Say hello properly.", false)
	comment(main, "Comment on main.go line 51 (old)", "Why drop this?", false)
	comment(`#pd-test section.pd-file[data-path="docs/new file.py"]`, "Comment on docs/new file.py line 3", "Use an f-string.", true)
	var state struct {
		Comments []pdComment `json:"comments"`
		Changes  int         `json:"changes"`
	}
	p.Eval(`pdT`, &state)
	wantComments := []pdComment{
		{"main.go", "new", 6, "Say hello properly.", "\tfmt.Println(\"hi\", 42) // greet"},
		{"main.go", "old", 51, "Why drop this?", "var big = 1"},
		{"docs/new file.py", "new", 3, "Use an f-string.", "    return 'hi ' + name  # friendly"},
	}
	if !reflect.DeepEqual(state.Comments, wantComments) || state.Changes != 3 {
		t.Errorf("comments %+v (%d changes), want %+v", state.Comments, state.Changes, wantComments)
	}
	var fb string
	p.Eval(`PlugboardDiff.feedback(pdT.comments, "Nearly there.")`, &fb)
	wantFeedback := "Nearly there.\n\nComments on the diff:\n" +
		"- docs/new file.py:3 (new): Use an f-string.\n  > return 'hi ' + name  # friendly\n" +
		"- main.go:6 (new): Say hello properly.\n  > fmt.Println(\"hi\", 42) // greet\n" +
		"- main.go:51 (old): Why drop this?\n  > var big = 1"
	if fb != wantFeedback {
		t.Errorf("feedback:\n%s\nwant:\n%s", fb, wantFeedback)
	}
	p.Eval(`PlugboardDiff.feedback([{path: "a.go", line: 1, side: "new", text: "long", code: "  " + "x".repeat(250)}], "")`, &fb)
	if want := "Comments on the diff:\n- a.go:1 (new): long\n  > " + strings.Repeat("x", 199) + "…"; fb != want {
		t.Errorf("feedback of a long line: %q", fb)
	}

	// Split keeps the comments, pairs the deletions with the additions,
	// and unified again keeps them too.
	p.Click(main + ` button[data-pd-mode="split"]`)
	p.WaitVisible(main + " table.pd-diff.pd-split")
	if p.Count(main+" table.pd-unified") != 0 || p.Count(main+` button[data-pd-mode="split"][aria-pressed="true"]`) != 1 {
		t.Errorf("split: the unified table or the toggle's state is left")
	}
	wantSplit := []string{
		"3| import \"fmt\"|3| import \"fmt\"", "4| |4| ", "5| func main() {|5| func main() {",
		"6|-\tfmt.Println(\"hello\")|6|+\tfmt.Println(\"hi\", 42) // greet", "Line 6: Say hello properly. Delete",
		"7| }|7| }", "8| // filler 8|8| // filler 8", "9| // filler 9|9| // filler 9",
	}
	wantSplit2 := []string{
		"48| // filler 48|48| // filler 48", "49| // filler 49|49| // filler 49", "50| // filler 50|50| // filler 50",
		"51|-var big = 1|51|+var big = `first", "Line 51 (old): Why drop this? Delete", "||52|+second`",
		"52| // filler 52|53| // filler 52", "53| // filler 53|54| // filler 53", "54| // filler 54|55| // filler 54",
	}
	checkRows("split main.go", rows("main.go"), wantSplit, wantSplit2)
	p.Click(main + ` button[data-pd-mode="unified"]`)
	p.WaitVisible(main + " table.pd-diff.pd-unified")
	if n := p.Count(main + " tr.pd-comment-row"); n != 2 {
		t.Errorf("unified again shows %d comments, want 2", n)
	}

	// axe, with a comment form open too. big.js leaves first: axe takes
	// seconds per hundred rows, and its rows are main.go's kind.
	p.Eval(`document.querySelector('#pd-test section.pd-file[data-path="big.js"]').remove(); true`, nil)
	p.Click(main + ` button.pd-add-comment[aria-label="Comment on main.go line 3"]`)
	p.WaitVisible(main + ` textarea[aria-label="Comment on main.go line 3"]`)
	a11y.RequireClean(t, p, "diff view", a11y.Within("#pd-test"))
	p.Press("Escape")
	p.WaitGone(main + " tr.pd-form-row")

	// Delete takes the comment out of the shared array.
	p.Click(main + ` button.pd-delete[aria-label="Delete the comment on main.go line 51 (old)"]`)
	p.WaitGone(main + ` button.pd-delete[aria-label="Delete the comment on main.go line 51 (old)"]`)
	p.Eval(`pdT`, &state)
	if len(state.Comments) != 2 || state.Changes != 4 {
		t.Errorf("after delete: %+v, %d changes", state.Comments, state.Changes)
	}

	// Read-only: the comments show, nothing to add or delete.
	var ro struct{ Add, Del, Shown int }
	p.Eval(`(() => {
		const f = PlugboardDiff.parse(pdPatch).find((f) => f.path === "main.go");
		const s = PlugboardDiff.render(f, {mode: "split", comments: pdT.comments, readOnly: true});
		return {Add: s.querySelectorAll(".pd-add-comment").length, Del: s.querySelectorAll(".pd-delete").length, Shown: s.querySelectorAll(".pd-comment-row").length};
	})()`, &ro)
	if ro.Add != 0 || ro.Del != 0 || ro.Shown != 1 {
		t.Errorf("read-only: %+v", ro)
	}
	for _, e := range p.ConsoleErrors() {
		if strings.Contains(e, "diffview") {
			t.Errorf("console: %s", e)
		}
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
