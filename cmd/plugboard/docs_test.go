package main

// Tests that hold the documentation to the code: docs/ARCHITECTURE.md's
// package table to `go list`, and the markers of the shell blocks of
// README.md and the guides under docs/ (docFiles; readme_e2e_test.go runs
// the blocks). They live here, beside the other
// README checks (TestREADMECommands, TestREADMEOwnModule), because the
// README's commands are this binary's: the blocks run against it.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// repoModule is the import path prefix of every package of the repository
// (the root module; abi and sdk-guest are modules under it).
const repoModule = "github.com/plugboard/plugboard"

// repoModules are the directories of the repository's Go modules.
var repoModules = []string{".", "abi", "sdk-guest"}

const architectureTable = "## Packages and what they may import"

// goPackage is a package of the repository as `go list` sees it: its path
// relative to the repository (abi/tasks, host) and the repository's
// packages it imports (tests aside).
type goPackage struct {
	name    string
	imports []string
	std     bool // imports only the standard library
}

// repoPackages lists every package of the repository's modules, testdata
// excluded.
func repoPackages(t *testing.T, root string) map[string]goPackage {
	t.Helper()
	pkgs := map[string]goPackage{}
	for _, mod := range repoModules {
		cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
		cmd.Dir = filepath.Join(root, mod)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go list ./... in %s: %v\n%s", cmd.Dir, err, stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			name, ok := repoRelative(fields[0])
			if !ok || name == "" || slices.Contains(strings.Split(name, "/"), "testdata") {
				continue
			}
			p := goPackage{name: name, std: true}
			for _, imp := range fields[1:] {
				if rel, ok := repoRelative(imp); ok {
					p.imports = append(p.imports, rel)
				}
				if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
					p.std = false
				}
			}
			slices.Sort(p.imports)
			pkgs[name] = p
		}
	}
	return pkgs
}

// repoRelative returns an import path relative to the repository, if it is
// one of the repository's.
func repoRelative(importPath string) (string, bool) {
	if importPath == repoModule {
		return "", true
	}
	return strings.CutPrefix(importPath, repoModule+"/")
}

// tableRow is a row of ARCHITECTURE's package table.
type tableRow struct {
	name    string
	imports []string
	none    bool // the imports cell says none
	line    int
}

// architectureRows reads the package table: the package in the first
// cell, the packages it imports (in backquotes, or "none") in the last.
func architectureRows(t *testing.T, root string) []tableRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	section, ok := clitest.MarkdownSection(doc, architectureTable)
	if !ok {
		t.Fatalf("docs/ARCHITECTURE.md has no %q section", architectureTable)
	}
	first := strings.Count(doc[:strings.Index(doc, "\n"+architectureTable+"\n")+1], "\n") + 2
	code := regexp.MustCompile("`([^`]+)`")
	var rows []tableRow
	for i, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		row := tableRow{name: strings.Trim(cells[0], "`"), line: first + i}
		last := cells[len(cells)-1]
		if len(cells) < 3 {
			t.Errorf("docs/ARCHITECTURE.md:%d: want three cells: package, owns, imports", row.line)
			continue
		}
		for _, m := range code.FindAllStringSubmatch(last, -1) {
			row.imports = append(row.imports, m[1])
		}
		row.none = strings.TrimSpace(last) == "none"
		rows = append(rows, row)
	}
	return rows
}

// TestArchitecturePackages holds docs/ARCHITECTURE.md's package table to
// `go list` over the repository's three modules: every package appears
// exactly once, the table names no package that does not exist, and each
// row's last cell lists exactly the repository's packages it imports (tests
// aside), or says none. The sentences under the table hold too: nothing in
// host/ reaches sdk-guest, and abi's packages import only the standard
// library.
func TestArchitecturePackages(t *testing.T) {
	root := buildtest.Root(t)
	pkgs := repoPackages(t, root)
	rows := architectureRows(t, root)
	if len(rows) == 0 {
		t.Fatal("docs/ARCHITECTURE.md: the package table has no rows")
	}
	seen := map[string]int{}
	for _, r := range rows {
		if prev, dup := seen[r.name]; dup {
			t.Errorf("docs/ARCHITECTURE.md:%d: %s is in the table twice (first on line %d)", r.line, r.name, prev)
			continue
		}
		seen[r.name] = r.line
		p, ok := pkgs[r.name]
		if !ok {
			t.Errorf("docs/ARCHITECTURE.md:%d: %s is no package of the repository (go list ./... in %s)", r.line, r.name, strings.Join(repoModules, ", "))
			continue
		}
		switch {
		case len(p.imports) == 0 && !r.none:
			t.Errorf("docs/ARCHITECTURE.md:%d: %s imports none of the repository's packages; its last cell should say none, not %q", r.line, r.name, r.imports)
		case len(p.imports) > 0 && !slices.Equal(sorted(r.imports), p.imports):
			t.Errorf("docs/ARCHITECTURE.md:%d: %s imports (-table, +go list):\n%s", r.line, r.name, lineDiff(sorted(r.imports), p.imports))
		}
	}
	var missing []string
	for name := range pkgs {
		if _, ok := seen[name]; !ok {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		t.Errorf("docs/ARCHITECTURE.md: package %s is not in the table; add a row:\n| `%s` | … | %s |", name, name, importsCell(pkgs[name].imports))
	}

	for name := range pkgs {
		if name == "host" || strings.HasPrefix(name, "host/") {
			if path := reaches(pkgs, name, "sdk-guest"); path != nil {
				t.Errorf("docs/ARCHITECTURE.md says nothing in host/ imports sdk-guest, but %s", strings.Join(path, " → "))
			}
		}
		if (name == "abi" || strings.HasPrefix(name, "abi/")) && (!pkgs[name].std || len(pkgs[name].imports) > 0 && !onlyABI(pkgs[name].imports)) {
			t.Errorf("docs/ARCHITECTURE.md says abi imports nothing outside the standard library, but %s does", name)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func onlyABI(imports []string) bool {
	for _, imp := range imports {
		if imp != "abi" && !strings.HasPrefix(imp, "abi/") {
			return false
		}
	}
	return true
}

// importsCell writes a table's last cell for imports.
func importsCell(imports []string) string {
	if len(imports) == 0 {
		return "none"
	}
	return "`" + strings.Join(imports, "`, `") + "`"
}

// reaches returns an import path from one package to another through the
// repository's packages, or nil.
func reaches(pkgs map[string]goPackage, from, to string) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if p == to {
			return []string{p}
		}
		if seen[p] {
			return nil
		}
		seen[p] = true
		for _, imp := range pkgs[p].imports {
			if path := walk(imp); path != nil {
				return append([]string{p}, path...)
			}
		}
		return nil
	}
	return walk(from)
}

// docFiles are the documents whose shell blocks the docs tests hold to the
// code, in the order TestREADMEShellBlocks runs them: the README, then the
// guides under docs/ that took the rest of what the README used to say
// (docs/DECISIONS.md, "A README a newcomer finishes; guides by task"). A
// new guide with commands belongs here.
var docFiles = []string{
	"README.md",
	"docs/plugin-authors.md",
	"docs/operators.md",
	"docs/task-tools.md",
	"docs/conformance.md",
}

// The shell blocks of docFiles. Each ```sh block is run by
// TestREADMEShellBlocks unless the line before its fence is one of these
// markers:
//
//	<!-- illustrative: REASON -->         not run, for the reason given
//	<!-- covered: TestName (path/x_test.go) ... -->
//	                                      run by that test (which must exist)
//	<!-- continues: REASON -->            run after the block before it, in
//	                                      the same shell (its variables)
//	<!-- fixture: NAME DESCRIPTION -->    run with the fixture NAME set up
//	                                      (readmeFixtures)
const readmeMarkerKinds = "illustrative, covered, continues, fixture"

// readmeBlock is a fenced code block of one of docFiles.
type readmeBlock struct {
	file    string // the document, relative to the repository: README.md, docs/operators.md
	lang    string
	body    string
	line    int    // line of the opening fence, from 1
	section string // the "## " heading it is under
	marker  readmeMarker
	// output is the block shown right below it (no blank line between),
	// which the documents use for a command's output; nil if none.
	output *readmeBlock
}

// where is the block's FILE:LINE, as the tests report it.
func (b *readmeBlock) where() string {
	return fmt.Sprintf("%s:%d", b.file, b.line)
}

// readmeMarker is a block's marker; kind "" for none.
type readmeMarker struct {
	kind, text string
	// test and file name the covering test of a covered block; fixture
	// the fixture of a fixture block.
	test, file, fixture string
}

var (
	markerLine  = regexp.MustCompile(`^<!--\s*([a-z]+):\s*(.*?)\s*-->$`)
	coveredText = regexp.MustCompile(`^(Test\w+) \(([\w./-]+_test\.go)\)`)
	fixtureText = regexp.MustCompile(`^([a-z][a-z0-9-]*)\b`)
)

// readmeBlocks parses the fenced blocks of file (one of docFiles), whose
// text is doc, and their markers. A marker that is malformed, of an unknown
// kind, or not right before a sh block is an error.
func readmeBlocks(file, doc string) ([]*readmeBlock, []string) {
	var (
		blocks   []*readmeBlock
		problems []string
		section  string
		cur      *readmeBlock
		prev     *readmeBlock // the last block closed, and the line after it
		after    = -1
	)
	lines := strings.Split(doc, "\n")
	for i, line := range lines {
		n := i + 1
		if cur != nil {
			if line == "```" {
				blocks = append(blocks, cur)
				prev, after, cur = cur, n+1, nil
				continue
			}
			cur.body += line + "\n"
			continue
		}
		if strings.HasPrefix(line, "## ") {
			section = line
		}
		if lang, ok := strings.CutPrefix(line, "```"); ok {
			cur = &readmeBlock{file: file, lang: lang, line: n, section: section}
			if n == after && prev != nil {
				prev.output = cur
			}
			if i > 0 && strings.HasPrefix(lines[i-1], "<!--") {
				m, problem := parseMarker(lines[i-1])
				if problem != "" {
					problems = append(problems, fmt.Sprintf("%s:%d: %s", file, n-1, problem))
				}
				if lang != "sh" {
					problems = append(problems, fmt.Sprintf("%s:%d: a marker before a %q block; markers are for sh blocks", file, n-1, lang))
				}
				cur.marker = m
			}
			continue
		}
		if m := markerLine.FindStringSubmatch(line); m != nil && slices.Contains(strings.Split(readmeMarkerKinds, ", "), m[1]) &&
			(i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```")) {
			problems = append(problems, fmt.Sprintf("%s:%d: a %s marker must be the line right before a ```sh block", file, n, m[1]))
		}
	}
	if cur != nil {
		problems = append(problems, fmt.Sprintf("%s:%d: the block is never closed", file, cur.line))
	}
	return blocks, problems
}

func parseMarker(line string) (readmeMarker, string) {
	m := markerLine.FindStringSubmatch(line)
	if m == nil {
		return readmeMarker{}, fmt.Sprintf("%q is no marker: want <!-- KIND: TEXT --> with KIND one of %s", line, readmeMarkerKinds)
	}
	mk := readmeMarker{kind: m[1], text: m[2]}
	switch mk.kind {
	case "illustrative", "continues":
		if mk.text == "" {
			return mk, mk.kind + " needs a reason"
		}
	case "covered":
		c := coveredText.FindStringSubmatch(mk.text)
		if c == nil {
			return mk, fmt.Sprintf("covered needs the test and its file: <!-- covered: TestName (path/to/x_test.go) -->, got %q", mk.text)
		}
		mk.test, mk.file = c[1], c[2]
	case "fixture":
		f := fixtureText.FindStringSubmatch(mk.text)
		if f == nil {
			return mk, fmt.Sprintf("fixture needs a name: <!-- fixture: NAME DESCRIPTION -->, got %q", mk.text)
		}
		mk.fixture = f[1]
	default:
		return mk, fmt.Sprintf("unknown marker kind %q: want one of %s", mk.kind, readmeMarkerKinds)
	}
	return mk, ""
}

// shellBlocks returns the sh blocks of docFiles, in their order, failing
// the test on a marker problem or a document without any.
func shellBlocks(t *testing.T, root string) []*readmeBlock {
	t.Helper()
	var sh []*readmeBlock
	var problems []string
	for _, file := range docFiles {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		blocks, found := readmeBlocks(file, string(b))
		problems = append(problems, found...)
		n := len(sh)
		for _, bl := range blocks {
			if bl.lang == "sh" {
				sh = append(sh, bl)
			}
		}
		if len(sh) == n {
			problems = append(problems, file+" has no sh blocks; take it out of docFiles")
		}
	}
	if len(problems) > 0 {
		t.Fatalf("the documents' shell-block markers:\n%s", strings.Join(problems, "\n"))
	}
	return sh
}

// TestREADMEShellMarkers checks the markers of the sh blocks of README.md
// and the guides (docFiles) without running anything: each is well formed, a covered block names a
// test that exists in the file it names, a fixture block one this test
// knows, and a continued block follows a block that runs.
func TestREADMEShellMarkers(t *testing.T) {
	root := buildtest.Root(t)
	blocks := shellBlocks(t, root)
	for i, bl := range blocks {
		switch m := bl.marker; m.kind {
		case "covered":
			src, err := os.ReadFile(filepath.Join(root, m.file))
			if err != nil {
				t.Errorf("%s:%d: covered by %s in %s: %v", bl.file, bl.line-1, m.test, m.file, err)
			} else if !strings.Contains(string(src), "\nfunc "+m.test+"(t *testing.T)") {
				t.Errorf("%s:%d: covered by %s, but %s has no such test", bl.file, bl.line-1, m.test, m.file)
			}
		case "fixture":
			if _, ok := readmeFixtures[m.fixture]; !ok {
				t.Errorf("%s:%d: no fixture %q (readmeFixtures knows %s)", bl.file, bl.line-1, m.fixture, strings.Join(fixtureNames(), ", "))
			}
		case "continues":
			if i == 0 || !blocks[i-1].runs() || blocks[i-1].file != bl.file || blocks[i-1].section != bl.section {
				t.Errorf("%s:%d: a block continues only a block that runs, in the same section", bl.file, bl.line-1)
			}
		}
	}
}

// runs reports whether TestREADMEShellBlocks runs the block.
func (b *readmeBlock) runs() bool {
	return b.marker.kind == "" || b.marker.kind == "continues" || b.marker.kind == "fixture"
}

func fixtureNames() []string {
	var names []string
	for name := range readmeFixtures {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// TestReadmeBlocksParse pins how blocks, outputs and markers are read.
func TestReadmeBlocksParse(t *testing.T) {
	doc := "## A\n\n<!-- illustrative: needs a key -->\n```sh\nx\n```\n```json\n{}\n```\n\n" +
		"<!-- covered: TestX (cmd/x_test.go) also y -->\n```sh\ny\n```\n<!-- continues: same shell -->\n```sh\nz\n```\n" +
		"## B\n<!-- fixture: agents-http a server -->\n```sh\nw\n```\n```sh\nv\n```\n"
	blocks, problems := readmeBlocks("docs/x.md", doc)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	var got []string
	for _, b := range blocks {
		if b.file != "docs/x.md" || b.where() != fmt.Sprintf("docs/x.md:%d", b.line) {
			t.Errorf("block at line %d: file %q, where %q", b.line, b.file, b.where())
		}
		s := fmt.Sprintf("%s@%d %s %q %s[%s%s%s]", b.lang, b.line, b.section, b.body, b.marker.kind, b.marker.test, b.marker.file, b.marker.fixture)
		if b.output != nil {
			s += fmt.Sprintf(" → %s@%d", b.output.lang, b.output.line)
		}
		got = append(got, s)
	}
	want := []string{
		`sh@4 ## A "x\n" illustrative[] → json@7`,
		`json@7 ## A "{}\n" []`,
		`sh@12 ## A "y\n" covered[TestXcmd/x_test.go]`,
		`sh@16 ## A "z\n" continues[]`,
		`sh@21 ## B "w\n" fixture[agents-http] → sh@24`,
		`sh@24 ## B "v\n" []`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("blocks (-got, +want):\n%s", lineDiff(got, want))
	}
	for _, bad := range []string{
		"<!-- illustrative -->\n```sh\nx\n```\n",
		"<!-- illustrative: -->\n```sh\nx\n```\n",
		"<!-- covered: the other test -->\n```sh\nx\n```\n",
		"<!-- skip: why -->\n```sh\nx\n```\n",
		"<!-- illustrative: why -->\n```json\n{}\n```\n",
		"<!-- illustrative: why -->\n\n```sh\nx\n```\n",
	} {
		if _, problems := readmeBlocks("docs/x.md", bad); len(problems) == 0 {
			t.Errorf("no problem found in %q", bad)
		} else if !strings.HasPrefix(problems[0], "docs/x.md:") {
			t.Errorf("the problem in %q does not say where: %s", bad, problems[0])
		}
	}
}

// TestPublicPackages: outside the host's internals and the trees that are
// products of their own (abi, sdk-guest, plugins, cmd, build, bench,
// conformance), the repository offers exactly the embedding API, its
// configuration and the plugin engine for tools — the three packages a
// program outside this module may import (docs/DECISIONS.md, "The host
// behind host/internal").
func TestPublicPackages(t *testing.T) {
	var public []string
	for name := range repoPackages(t, buildtest.Root(t)) {
		inside := false
		for _, tree := range []string{"host/internal", "internal", "abi", "sdk-guest", "conformance", "cmd", "plugins", "build", "bench"} {
			if name == tree || strings.HasPrefix(name, tree+"/") {
				inside = true
			}
		}
		if !inside {
			public = append(public, name)
		}
	}
	slices.Sort(public)
	if want := []string{"host", "host/config", "host/plugin"}; !slices.Equal(public, want) {
		t.Errorf("packages outside host/internal and the product trees: %v, want %v (at most three; a new one belongs under host/internal)", public, want)
	}
}
