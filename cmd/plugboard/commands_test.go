package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestCommandSynopses holds every synopsis of the command table, and of
// each shared flag group, to the flags the command registers: each flag
// shown once (itself or through a group), no flag shown that does not
// exist, values shown for the flags that take one, "..." for the
// repeatable ones.
func TestCommandSynopses(t *testing.T) {
	for _, g := range flagGroups {
		fs := g.flagSet()
		if problems := checkUsage(g.usage, defaultsOf(fs), listFlags(fs)); len(problems) > 0 {
			t.Errorf("[%s] %s:\n  %s", g.name, g.usage, strings.Join(problems, "\n  "))
		}
	}
	for _, c := range commands {
		docs, err := c.flagDocs()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		lists := map[string]bool{}
		if c.setup != nil {
			fs := c.newFlagSet()
			c.setup(fs)
			lists = listFlags(fs)
		} else if len(docs) == 0 {
			t.Errorf("%s: -h lists no flags", c.name)
		}
		if problems := checkUsage(c.usage, docs, lists); len(problems) > 0 {
			t.Errorf("plugboard %s:\n  %s", c.synopsis(), strings.Join(problems, "\n  "))
		}
		if c.summary == "" || strings.Contains(c.summary, "\n") {
			t.Errorf("%s: the summary must be one line: %q", c.name, c.summary)
		}
		if c.setup == nil {
			t.Errorf("%s: no setup", c.name)
		}
	}
}

// checkUsage compares the flags a synopsis shows with the flags
// registered (docs); lists names the repeatable flags where known.
func checkUsage(usage string, docs []flagDoc, lists map[string]bool) []string {
	var problems []string
	u := parseUsage(usage)
	shown := map[string]usageFlag{}
	add := func(f usageFlag, where string) {
		if _, dup := shown[f.name]; dup {
			problems = append(problems, fmt.Sprintf("--%s is shown twice (again %s)", f.name, where))
		}
		shown[f.name] = f
	}
	for _, f := range u.flags {
		add(f, "in the synopsis")
	}
	for _, g := range u.groups {
		if lookupGroup(g) == nil {
			problems = append(problems, fmt.Sprintf("[%s] is no flag group", g))
			continue
		}
		for _, f := range expandGroup(g) {
			add(f, "in ["+g+"]")
		}
	}
	registered := map[string]bool{}
	for _, d := range docs {
		registered[d.name] = true
		f, ok := shown[d.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("--%s is a flag the synopsis does not show", d.name))
		case d.typ == "" && f.eq && f.value != "true" && f.value != "false":
			problems = append(problems, fmt.Sprintf("--%s is boolean; shown as --%s=%s", d.name, d.name, f.value))
		case d.typ == "" && !f.eq && f.value != "":
			problems = append(problems, fmt.Sprintf("--%s is boolean; shown with a value %s", d.name, f.value))
		case d.typ != "" && f.value == "":
			problems = append(problems, fmt.Sprintf("--%s takes a value (%s); shown without one", d.name, d.typ))
		}
		if list, known := lists[d.name]; ok && known && list != f.repeat {
			problems = append(problems, fmt.Sprintf("--%s: repeatable is %v, but the synopsis says %v", d.name, list, f.repeat))
		}
	}
	for name := range shown {
		if !registered[name] {
			problems = append(problems, fmt.Sprintf("--%s is shown but is no flag of the command", name))
		}
	}
	slices.Sort(problems)
	return problems
}

// listFlags tells, for each flag of fs, whether it collects repeated
// values (a slice-backed flag.Value).
func listFlags(fs *flag.FlagSet) map[string]bool {
	lists := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		v := reflect.ValueOf(f.Value)
		lists[f.Name] = v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Slice
	})
	return lists
}

// TestParseUsage pins how synopses are read.
func TestParseUsage(t *testing.T) {
	u := parseUsage("TASK_ID --executor E [--repo REPO_ID[@BRANCH]]... [--json | --junit FILE] [--warm=false] ['JSON'] [-o FILE.wasm] [board flags]")
	if want := []string{"TASK_ID", "['JSON']"}; !slices.Equal(u.positionals, want) {
		t.Errorf("positionals %q, want %q", u.positionals, want)
	}
	want := []usageFlag{{name: "executor", value: "E"}, {name: "repo", value: "REPO_ID[@BRANCH]", repeat: true},
		{name: "json"}, {name: "junit", value: "FILE"}, {name: "warm", value: "false", eq: true}, {name: "o", value: "FILE.wasm"}}
	if !reflect.DeepEqual(u.flags, want) {
		t.Errorf("flags %+v, want %+v", u.flags, want)
	}
	if !slices.Equal(u.groups, []string{"board flags"}) {
		t.Errorf("groups %q", u.groups)
	}
	docs := parseDefaults("  -data string\n    \tdata directory\n    \tsecond line (default \"x\")\n  -json\n    \tprint JSON\n  -o\tone letter\n")
	wantDocs := []flagDoc{{"data", "string", "data directory\nsecond line (default \"x\")"}, {"json", "", "print JSON"}, {"o", "", "one letter"}}
	if !reflect.DeepEqual(docs, wantDocs) {
		t.Errorf("parseDefaults: %+v, want %+v", docs, wantDocs)
	}
}

// commandsGuide is the document that holds the command reference: the
// operators' guide, which took it from the README.
const commandsGuide = "docs/operators.md"

// TestREADMECommands holds the command reference (commandsGuide) to the
// table: the "Commands" table lists the commands of the main section, the
// table in "Set up and watch a board from the command line" the board
// commands, each as `plugboard SYNOPSIS`, in the table's order; and the
// table of the flags serve and call share lists the host flags.
func TestREADMECommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(commandsGuide)))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, s := range []struct {
		heading string
		section section
	}{
		{"## Commands", sectionMain},
		{"## Set up and watch a board from the command line", sectionBoard},
	} {
		text, ok := clitest.MarkdownSection(readme, s.heading)
		if !ok {
			t.Errorf("%s has no %q section", commandsGuide, s.heading)
			continue
		}
		var got, want []string
		for _, cell := range firstCells(text) {
			if syn, ok := strings.CutPrefix(cell, "plugboard "); ok {
				got = append(got, syn)
			}
		}
		for _, c := range commands {
			if c.section == s.section {
				want = append(want, c.synopsis())
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s %q lists other commands than the command table (-guide, +table):\n%s\n"+
				"Rows as the table has them:\n%s", commandsGuide, s.heading, lineDiff(got, want), readmeRows(want))
		}
	}

	text, _ := clitest.MarkdownSection(readme, "## Commands")
	var got, want []string
	for _, cell := range firstCells(text) {
		if strings.HasPrefix(cell, "--") {
			got = append(got, cell)
		}
	}
	for _, f := range expandGroup("host flags") {
		want = append(want, strings.TrimSpace("--"+f.name+" "+f.value))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: the table of the flags serve and call share differs from [host flags] (-guide, +table):\n%s", commandsGuide, lineDiff(got, want))
	}
}

// firstCells lists the first cell of each table row whose cell is code:
// "| `plugboard x \| y` | ..." gives "plugboard x | y".
func firstCells(text string) []string {
	var cells []string
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, "| `")
		if !ok {
			continue
		}
		end := strings.Index(rest, "` |")
		if end < 0 {
			continue
		}
		cells = append(cells, strings.ReplaceAll(rest[:end], `\|`, "|"))
	}
	return cells
}

// readmeRows writes synopses as rows of commandsGuide's tables.
func readmeRows(synopses []string) string {
	var b strings.Builder
	for _, s := range synopses {
		for _, c := range commands {
			if c.synopsis() == s {
				fmt.Fprintf(&b, "| `plugboard %s` | %s |\n", strings.ReplaceAll(s, "|", `\|`), c.summary)
			}
		}
	}
	return b.String()
}

// lineDiff is a line diff of a and b: "  " both, "- " a only, "+ " b only.
func lineDiff(a, b []string) string {
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString("    " + a[i] + "\n")
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("  + " + b[j] + "\n")
			j++
		default:
			out.WriteString("  - " + a[i] + "\n")
			i++
		}
	}
	return out.String()
}

func TestLineDiff(t *testing.T) {
	got := lineDiff([]string{"a", "b", "c"}, []string{"a", "c", "d"})
	if want := "    a\n  - b\n    c\n  + d\n"; got != want {
		t.Errorf("lineDiff:\n%s\nwant:\n%s", got, want)
	}
}

// cli runs plugboard in-process and returns stdout, stderr (with the
// error main would print) and the exit status.
func cli(args ...string) (string, string, int) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	code := 0
	if err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != errSilent {
			fmt.Fprintln(&stderr, "plugboard:", err)
		}
	}
	return stdout.String(), stderr.String(), code
}

// TestDispatch checks how the table is found from the arguments: help,
// unknown commands with the closest names, missing subcommands, usage
// errors with the command's synopsis.
func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, err   string // substrings of stdout and stderr
		notOut     string
		onlyStdout bool
	}{
		{args: nil, code: 2, err: "Usage: plugboard COMMAND"},
		{args: []string{"help"}, out: "plugboard attempt logs ATTEMPT_ID ["},
		{args: []string{"-h"}, out: "Task board"},
		{args: []string{"--help"}, out: "[board flags]\n      [--data DIR]"},
		{args: []string{"version"}, out: "plugboard " + version},
		{args: []string{"--version"}, out: "plugboard " + version},
		{args: []string{"serv"}, code: 2, err: `unknown command "serv"; did you mean "serve"?`},
		{args: []string{"atempt", "list"}, code: 2, err: `did you mean "attempt"?`},
		{args: []string{"logs"}, code: 2, err: `did you mean "attempt logs"?`},
		{args: []string{"frobnicate"}, code: 2, err: "unknown command \"frobnicate\"\n"},
		{args: []string{"attempt"}, code: 2, err: "attempt needs a subcommand: start, list, status, logs, stop, executors"},
		{args: []string{"attempt", "statsu", "x"}, code: 2, err: `unknown attempt subcommand "statsu"; did you mean "status"?`},
		{args: []string{"plugin"}, code: 2, err: "Usage:\n  plugboard plugin build DIR [-o FILE.wasm]\n"},
		{args: []string{"attempt", "logs", "-h"}, out: "--cursor N\n", notOut: "Also:"},
		{args: []string{"task", "list", "--help"}, out: "Board flags:\n  --data DIR\n"},
		{args: []string{"help", "task", "list"}, out: "--limit N\n"},
		{args: []string{"help", "attempt"}, out: "plugboard attempt stop ATTEMPT_ID"},
		{args: []string{"help", "conformance"}, out: "Usage: plugboard conformance --scenarios PACK"},
		{args: []string{"conformance", "-h"}, out: "Also: plugboard conformance --scenarios PACK"},
		{args: []string{"serve", "-h"}, out: "Host flags:\n  --plugins DIR\n"},
		{args: []string{"call", "--help"}, out: "--progress\n"},
		{args: []string{"help", "nosuch"}, code: 2, err: `unknown command "nosuch"`},
		{args: []string{"attempt", "logs"}, code: 2, err: "attempt logs takes ATTEMPT_ID, got 0 argument(s)\n\nUsage: plugboard attempt logs ATTEMPT_ID ["},
		{args: []string{"attempt", "logs", "x", "--bogus"}, code: 2, err: "flag provided but not defined: -bogus\n\nUsage: plugboard attempt logs"},
		{args: []string{"attempt", "logs", "x", "--limit"}, code: 2, err: "flag needs an argument: -limit"},
		{args: []string{"call"}, code: 2, err: "\n\nUsage: plugboard call TOOL ['JSON']"},
		{args: []string{"demo", "extra"}, code: 2, err: "Run 'plugboard help demo' for its flags."},
	} {
		out, errOut, code := cli(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) ||
			(tc.notOut != "" && strings.Contains(out, tc.notOut)) {
			t.Errorf("plugboard %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, out, errOut)
		}
	}
}

// TestCommandHelp checks that every command answers -h with its synopsis
// and every flag it registers, on stdout, exit status 0.
func TestCommandHelp(t *testing.T) {
	for _, c := range commands {
		args := append(strings.Fields(c.name), "-h")
		if c.when != nil {
			args = append(strings.Fields(c.name), "--scenarios", "PACK", "-h")
		}
		out, errOut, code := cli(args...)
		if code != 0 || !strings.HasPrefix(out, "Usage: plugboard "+c.synopsis()+"\n") || errOut != "" {
			t.Errorf("plugboard %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
			continue
		}
		docs, err := c.flagDocs()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if !strings.Contains(out, "-"+d.name) || !strings.Contains(out, strings.Split(d.usage, "\n")[0]) {
				t.Errorf("plugboard %s -h does not explain --%s:\n%s", c.name, d.name, out)
			}
		}
	}
}
