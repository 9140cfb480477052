package main

// The command table's machinery: how a row of the table (commands.go) is
// found from the arguments, parses its flags and runs, and how the
// top-level usage, each command's help and usage errors are written from
// it. Synopses are data the code reads: the flags a synopsis shows are
// held to the flags the command really registers (commands_test.go).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// command is one row of the command table.
type command struct {
	// name is the words that select it: "serve", "attempt logs".
	name string
	// usage is the rest of its synopsis: positional arguments and flags,
	// in the order people need them, and the shared flag groups it takes
	// ("[board flags]"). Flags in brackets are optional, "..." repeatable;
	// a flag outside brackets takes the next word as its value.
	usage string
	// summary is one line saying what it does.
	summary string
	section section
	// when, if set, picks this row over the others of the same name for
	// these arguments (conformance --scenarios).
	when func(args []string) bool
	// setup registers the command's flags on fs and returns the function
	// that runs it once fs has parsed the arguments.
	setup func(fs *flag.FlagSet) runFunc
}

// runFunc runs a command whose flags are parsed.
type runFunc func(ctx context.Context, in *invocation) error

// invocation is one run of a command.
type invocation struct {
	cmd            *command
	args           []string // the positional arguments
	stdout, stderr io.Writer
}

// nargs checks that between min and max positional arguments were given
// (max < 0: any number).
func (in *invocation) nargs(min, max int) error {
	if n := len(in.args); n >= min && (max < 0 || n <= max) {
		return nil
	}
	if pos := in.cmd.positionals(); pos != "" {
		return usageError("%s takes %s, got %d argument(s)", in.cmd.name, pos, len(in.args))
	}
	return usageError("%s takes no arguments, got %q", in.cmd.name, in.args)
}

// section is where the top-level usage lists a command.
type section int

const (
	sectionMain section = iota
	sectionBoard
)

var sectionTitles = map[section]string{
	sectionMain:  "Commands:",
	sectionBoard: "Task board (PROJECT is a project id or exact name):",
}

// flagGroup is a set of flags several commands share; a synopsis names
// it in brackets ("[board flags]") instead of listing its flags.
type flagGroup struct {
	name string
	// usage shows its flags as a synopsis does; it may name other groups.
	usage string
	// register defines its flags, the same function the commands taking
	// it call.
	register func(fs *flag.FlagSet)
}

func (g *flagGroup) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(g.name, flag.ContinueOnError)
	g.register(fs)
	return fs
}

func lookupGroup(name string) *flagGroup {
	for _, g := range flagGroups {
		if g.name == name {
			return g
		}
	}
	return nil
}

func (c *command) synopsis() string {
	if c.usage == "" {
		return c.name
	}
	return c.name + " " + c.usage
}

// positionals is the synopsis without its flags: "PROJECT TITLE".
func (c *command) positionals() string {
	return strings.Join(parseUsage(c.usage).positionals, " ")
}

// ---- finding and running a command ----

// run runs the command args name. Misuse is an *exitError with code 2
// whose usageErr ends with the command's usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		writeUsage(stderr)
		return &exitError{code: 2, err: errSilent}
	}
	switch args[0] {
	case "-h", "-help", "--help":
		args = append([]string{"help"}, args[1:]...)
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c, rest, err := lookup(args)
	if err != nil {
		return err
	}
	err = c.run(ctx, rest, stdout, stderr)
	var u *usageErr
	if errors.As(err, &u) && u.usage == "" {
		u.usage = c.shortUsage()
	}
	return err
}

// lookup finds the command the first words of args name and returns it
// with the arguments that follow its name.
func lookup(args []string) (*command, []string, error) {
	var found []*command
	words := 0
	for _, c := range commands {
		n := strings.Fields(c.name)
		if len(n) <= len(args) && slices.Equal(n, args[:len(n)]) {
			if len(n) > words {
				found, words = nil, len(n)
			}
			if len(n) == words {
				found = append(found, c)
			}
		}
	}
	if len(found) == 0 {
		return nil, nil, unknownCommand(args)
	}
	rest := args[words:]
	var fallback *command
	for _, c := range found {
		if c.when == nil {
			fallback = c
		} else if c.when(rest) {
			return c, rest, nil
		}
	}
	return fallback, rest, nil
}

// unknownCommand explains args that name no command, suggesting the
// closest names.
func unknownCommand(args []string) error {
	if subs := subcommands(args[0]); len(subs) > 0 {
		var usage strings.Builder
		usage.WriteString("Usage:\n")
		for _, c := range commands {
			if strings.HasPrefix(c.name, args[0]+" ") {
				fmt.Fprintf(&usage, "  plugboard %s\n", c.synopsis())
			}
		}
		fmt.Fprintf(&usage, "Run 'plugboard help %s SUBCOMMAND' for one's flags.", args[0])
		if len(args) == 1 {
			return &exitError{code: 2, err: &usageErr{msg: fmt.Sprintf("%s needs a subcommand: %s", args[0], strings.Join(subs, ", ")),
				usage: usage.String()}}
		}
		msg := fmt.Sprintf("unknown %s subcommand %q%s", args[0], args[1], didYouMean(args[1], subs))
		return &exitError{code: 2, err: &usageErr{msg: msg, usage: usage.String()}}
	}
	// Suggest from the commands and their first words ("attempt").
	var names, candidates []string
	for _, c := range commands {
		if !slices.Contains(names, c.name) {
			names = append(names, c.name)
		}
		first, _, _ := strings.Cut(c.name, " ")
		for _, n := range []string{first, c.name} {
			if !slices.Contains(candidates, n) {
				candidates = append(candidates, n)
			}
		}
	}
	return &exitError{code: 2, err: &usageErr{msg: fmt.Sprintf("unknown command %q%s", args[0], didYouMean(args[0], candidates)),
		usage: "Commands: " + strings.Join(names, ", ") + ".\nRun 'plugboard help' for their synopses."}}
}

// subcommands lists the second words of the commands whose first word is
// group ("build", "inspect" for "plugin").
func subcommands(group string) []string {
	var subs []string
	for _, c := range commands {
		if first, sub, ok := strings.Cut(c.name, " "); ok && first == group {
			subs = append(subs, sub)
		}
	}
	return subs
}

// didYouMean suggests the names closest to typed, nearest first; a
// multi-word name also matches on its last word ("logs": "attempt logs").
func didYouMean(typed string, names []string) string {
	type near struct {
		name string
		dist int
	}
	var close []near
	for _, n := range names {
		d := editDistance(typed, n)
		if i := strings.LastIndexByte(n, ' '); i >= 0 {
			d = min(d, editDistance(typed, n[i+1:]))
		}
		if d <= max(1, utf8.RuneCountInString(typed)/3) {
			close = append(close, near{n, d})
		}
	}
	if len(close) == 0 {
		return ""
	}
	slices.SortStableFunc(close, func(a, b near) int { return a.dist - b.dist })
	quoted := make([]string, 0, 4)
	for _, c := range close[:min(len(close), 4)] {
		quoted = append(quoted, fmt.Sprintf("%q", c.name))
	}
	if len(quoted) == 1 {
		return "; did you mean " + quoted[0] + "?"
	}
	return "; did you mean " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1] + "?"
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and transpositions of neighbours.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// newFlagSet is the flag set a command parses with: quiet, since parse
// errors and help are written from the table.
func (c *command) newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// run parses args with the command's flags and runs it. -h or --help
// prints its help on stdout (exit status 0); a flag error is a usage error
// (exit status 2).
func (c *command) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := c.newFlagSet()
	runf := c.setup(fs)
	if err := fs.Parse(reorderFlags(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c.writeHelp(stdout, true)
		}
		return usageError("%v", err)
	}
	return runf(ctx, &invocation{cmd: c, args: fs.Args(), stdout: stdout, stderr: stderr})
}

// reorderFlags moves flags ahead of positional arguments, consulting fs for
// which flags take a value, so "task list demo --json" and "attempt logs
// --follow ID" both work. Everything after "--" is positional, and
// positionals are passed after a "--" so a title starting with "-" stays
// a title.
func reorderFlags(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) {
			if i+1 == len(args) {
				return flags // for the flag package to say the value is missing
			}
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(append(flags, "--"), pos...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// ---- usage errors ----

// usageErr is misuse of a command: the message, then how to use it.
type usageErr struct {
	msg string
	// usage follows the message; "" until the dispatcher sets the
	// command's, and the top-level usage if it never does.
	usage string
}

func (e *usageErr) Error() string {
	usage := e.usage
	if usage == "" {
		var b strings.Builder
		writeUsage(&b)
		usage = b.String()
	}
	return e.msg + "\n\n" + strings.TrimRight(usage, "\n")
}

// usageError reports misuse (exit status 2): the message, then the
// usage of the command that was running.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: &usageErr{msg: fmt.Sprintf(format, args...)}}
}

// shortUsage is what follows a usage error: the synopsis and where the
// flags are explained.
func (c *command) shortUsage() string {
	return fmt.Sprintf("Usage: plugboard %s\nRun 'plugboard help %s' for its flags.", c.synopsis(), c.name)
}

// ---- usage and help ----

// writeUsage writes the top-level usage: every command's synopsis and
// summary, then the shared flag groups.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "plugboard — an MCP tool host whose tools are sandboxed WebAssembly plugins\n\n")
	fmt.Fprint(w, "Usage: plugboard COMMAND [ARGUMENT]... [FLAG]...\n")
	for _, s := range []section{sectionMain, sectionBoard} {
		fmt.Fprintf(w, "\n%s\n", sectionTitles[s])
		for _, c := range commands {
			if c.section == s {
				fmt.Fprintf(w, "  plugboard %s\n      %s\n", c.synopsis(), c.summary)
			}
		}
	}
	fmt.Fprint(w, "\nShared flags, as synopses name them:\n")
	for _, g := range flagGroups {
		fmt.Fprintf(w, "  [%s]\n      %s\n", g.name, g.usage)
	}
	fmt.Fprint(w, "\nRun 'plugboard help COMMAND' or 'plugboard COMMAND -h' for a command's flags.\n")
}

// writeHelp writes a command's help: synopsis, summary and every flag,
// its own first, then each group's; with also, the synopses of the other
// rows of its name.
func (c *command) writeHelp(w io.Writer, also bool) error {
	docs, err := c.flagDocs()
	if err != nil {
		return err
	}
	byName := map[string]flagDoc{}
	for _, d := range docs {
		byName[d.name] = d
	}
	fmt.Fprintf(w, "Usage: plugboard %s\n\n%s.\n", c.synopsis(), sentence(c.summary))
	u := parseUsage(c.usage)
	writeFlags(w, "Flags", u.flags, byName)
	for _, g := range u.groups {
		writeFlags(w, sentence(g), expandGroup(g), byName)
	}
	var others []string
	for _, o := range commands {
		if also && o.name == c.name && o != c {
			others = append(others, "plugboard "+o.synopsis())
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(w, "\nAlso: %s\n", strings.Join(others, "\n      "))
	}
	return nil
}

func writeFlags(w io.Writer, title string, flags []usageFlag, docs map[string]flagDoc) {
	if len(flags) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	for _, f := range flags {
		d, ok := docs[f.name]
		if !ok {
			continue
		}
		head := "--" + f.name
		if len(f.name) == 1 {
			head = "-" + f.name
		}
		if f.value != "" && !f.eq {
			head += " " + f.value
		}
		fmt.Fprintf(w, "  %s\n        %s\n", head, strings.ReplaceAll(d.usage, "\n", "\n        "))
	}
}

// sentence capitalizes s's first letter.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// ---- flags as registered ----

// flagDoc is a registered flag as help shows it.
type flagDoc struct {
	name string
	// typ is the kind of value ("string", "duration", "value"); "" for a
	// boolean flag.
	typ string
	// usage is the flag's description and default.
	usage string
}

// flagDocs lists the flags the command registers.
func (c *command) flagDocs() ([]flagDoc, error) {
	fs := c.newFlagSet()
	c.setup(fs)
	return defaultsOf(fs), nil
}

// defaultsOf lists fs's flags as PrintDefaults describes them.
func defaultsOf(fs *flag.FlagSet) []flagDoc {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return parseDefaults(b.String())
}

// parseDefaults reads flag.PrintDefaults output: per flag a line "  -NAME
// [TYPE]", then its usage on lines indented "    \t" (for a one-letter
// boolean flag, on the same line after a tab).
func parseDefaults(text string) []flagDoc {
	var docs []flagDoc
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "    \t"); ok && len(docs) > 0 {
			d := &docs[len(docs)-1]
			if d.usage != "" {
				d.usage += "\n"
			}
			d.usage += rest
			continue
		}
		head, ok := strings.CutPrefix(line, "  -")
		if !ok {
			continue
		}
		head, usage, _ := strings.Cut(head, "\t")
		name, typ, _ := strings.Cut(head, " ")
		docs = append(docs, flagDoc{name: name, typ: typ, usage: usage})
	}
	return docs
}

// ---- reading synopses ----

// usageFlag is a flag as a synopsis shows it.
type usageFlag struct {
	name string
	// value is its value's placeholder ("DIR", "normalized|raw"), or what
	// follows "=" ("--warm=false"); "" for none.
	value  string
	eq     bool
	repeat bool // "[--plugins DIR]..."
}

// parsedUsage is a synopsis taken apart.
type parsedUsage struct {
	positionals []string // "PROJECT", "TITLE", "['JSON']"
	flags       []usageFlag
	groups      []string // "board flags"
}

// parseUsage takes a synopsis (without the command's name) apart. Its
// items are separated by spaces outside brackets. An item starting with
// "-" or "[-" holds flags ("[--json | --junit FILE]"); "[NAME flags]"
// names a group; any other item is a positional argument, unless it is
// the value of the flag outside brackets before it ("--executor E").
func parseUsage(s string) parsedUsage {
	var u parsedUsage
	items := splitItems(s)
	for i := 0; i < len(items); i++ {
		item := items[i]
		repeat := strings.HasSuffix(item, "...")
		bare := strings.TrimSuffix(item, "...")
		switch {
		case strings.HasPrefix(bare, "[") && strings.HasSuffix(bare, " flags]") && !strings.Contains(bare, "-"):
			u.groups = append(u.groups, bare[1:len(bare)-1])
		case strings.HasPrefix(bare, "-"):
			f := parseFlag(bare)
			if f.value == "" && i+1 < len(items) {
				i++
				f.value = items[i]
				repeat = strings.HasSuffix(f.value, "...")
				f.value = strings.TrimSuffix(f.value, "...")
			}
			f.repeat = repeat
			u.flags = append(u.flags, f)
		case strings.HasPrefix(bare, "[-"):
			inner := splitItems(bare[1 : len(bare)-1])
			for j := 0; j < len(inner); j++ {
				if !strings.HasPrefix(inner[j], "-") {
					continue
				}
				f := parseFlag(inner[j])
				if f.value == "" && j+1 < len(inner) && inner[j+1] != "|" && !strings.HasPrefix(inner[j+1], "-") {
					j++
					f.value = inner[j]
				}
				f.repeat = repeat
				u.flags = append(u.flags, f)
			}
		default:
			u.positionals = append(u.positionals, item)
		}
	}
	return u
}

// parseFlag reads "--name" or "--name=value".
func parseFlag(tok string) usageFlag {
	name, value, eq := strings.Cut(strings.TrimLeft(tok, "-"), "=")
	return usageFlag{name: name, value: value, eq: eq}
}

// splitItems splits s at spaces outside brackets.
func splitItems(s string) []string {
	var items []string
	depth, start := 0, -1
	for i, r := range s + " " {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case r == ' ' && depth == 0:
			if start >= 0 {
				items = append(items, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return items
}

// expandGroup lists a group's flags as its synopsis shows them, the
// groups it names included.
func expandGroup(name string) []usageFlag {
	g := lookupGroup(name)
	if g == nil {
		return nil
	}
	u := parseUsage(g.usage)
	flags := u.flags
	for _, sub := range u.groups {
		flags = append(flags, expandGroup(sub)...)
	}
	return flags
}
