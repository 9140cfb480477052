package scenario

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// usageHead opens Main's usage text; the flags follow (PrintDefaults).
const usageHead = `Usage: plugboard conformance --scenarios PACK [PLUGIN_DIR]... [--plugins DIR]... [flags]

Runs the scenario pack PACK (JSON) against live servers: for each scenario, a
fresh board (temporary data directory, git repository, project) and its own
'plugboard serve' with the given plugin folders. Exit status 0 when every
scenario passes, 1 when one fails, 2 on misuse or a pack that does not load.

Flags:
`

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// CLI is the command line of a pack run, `plugboard conformance --scenarios
// PACK [PLUGIN_DIR]...`: Register puts its flags on a flag set (plugboard's
// command table does, and Main), Run runs what they say.
type CLI struct {
	pack    string
	asJSON  bool
	junit   string
	plugins multiFlag
	opts    Options
}

// Register defines the flags on fs.
func (c *CLI) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.pack, "scenarios", "", "the scenario pack (JSON) to run, e.g. conformance/scenarios/first-party.json")
	fs.Var(&c.plugins, "plugins", "a plugin folder served in every scenario (repeatable; folders may also be given as arguments)")
	fs.StringVar(&c.opts.Filter, "run", "", "run only the scenarios whose id or name matches this regular expression")
	fs.BoolVar(&c.asJSON, "json", false, "print the report as JSON instead of text")
	fs.StringVar(&c.junit, "junit", "", "also write the report as JUnit XML to this file")
	fs.IntVar(&c.opts.Parallel, "parallel", 2, "scenarios run at once")
	fs.StringVar(&c.opts.Binary, "binary", "", "the plugboard binary to serve with (default: this one)")
	fs.StringVar(&c.opts.CacheDir, "cache", "", "compiled-code cache to share across runs (default: a temporary one)")
	fs.BoolVar(&c.opts.Keep, "keep", false, "keep the board, repository and server log of each scenario that does not pass")
}

// Main implements `plugboard conformance --scenarios PACK ...`; args are
// the command's arguments (without "conformance"). Progress lines go to
// stderr, the report to stdout. It returns the exit status: 0 every
// scenario passed, 1 one did not, 2 misuse or a pack that does not load.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c CLI
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageHead); fs.PrintDefaults() }
	c.Register(fs)
	// Flags and plugin folders may be interleaved.
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		c.plugins = append(c.plugins, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if c.pack == "" {
		fmt.Fprint(stderr, "conformance: --scenarios PACK is required\n\n")
		fs.Usage()
		return 2
	}
	return c.Run(ctx, nil, stdout, stderr)
}

// Run runs the pack with the plugin folders of --plugins, then dirs. It
// returns the exit status, as Main does.
func (c *CLI) Run(ctx context.Context, dirs []string, stdout, stderr io.Writer) int {
	if c.pack == "" {
		fmt.Fprintln(stderr, "conformance: --scenarios PACK is required")
		return 2
	}
	opts := c.opts
	opts.PluginDirs = append(append([]string(nil), c.plugins...), dirs...)
	opts.Stderr = stderr
	rep, err := Run(ctx, c.pack, opts)
	if err != nil {
		fmt.Fprintf(stderr, "conformance: %v\n", err)
		return 2
	}
	if c.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		WriteText(stdout, rep, c.pack)
	}
	if c.junit != "" {
		f, err := os.Create(c.junit)
		if err == nil {
			err = WriteJUnit(f, rep)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "conformance: write %s: %v\n", c.junit, err)
			return 2
		}
	}
	if rep.Failed > 0 {
		return 1
	}
	return 0
}

// WriteText writes the human report: one line per scenario, the messages
// of those that did not pass, a summary, and how to rerun one.
func WriteText(w io.Writer, rep Report, packPath string) {
	title := rep.Pack
	if rep.Version != "" {
		title += " " + rep.Version
	}
	fmt.Fprintf(w, "scenario pack %s: %d scenarios\n\n", title, len(rep.Results))
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%-5s %s — %s (%.1fs)\n", strings.ToUpper(r.Status), r.ID, r.Name, r.Duration.Seconds())
	}
	var failed []Result
	for _, r := range rep.Results {
		if r.Status != StatusPass {
			failed = append(failed, r)
		}
	}
	for _, r := range failed {
		fmt.Fprintf(w, "\n--- %s %s: %s\n    requirement: %s\n", strings.ToUpper(r.Status), r.ID, r.Name, r.Requirement)
		for _, line := range strings.Split(r.Message, "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed in %.1fs\n", rep.Passed, rep.Failed, rep.Duration.Seconds())
	if len(failed) > 0 {
		fmt.Fprintf(w, "rerun one: plugboard conformance --scenarios %s --plugins DIR --run '^%s$' --keep\n", packPath, failed[0].ID)
	}
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: one suite for the pack, one
// test case per scenario (classname: the requirement).
func WriteJUnit(w io.Writer, rep Report) error {
	suite := junitSuite{Name: rep.Pack, Tests: len(rep.Results), Time: seconds(rep.Duration.Seconds())}
	for _, r := range rep.Results {
		c := junitCase{Name: r.ID + ": " + r.Name, Classname: rep.Pack + "." + r.Requirement, Time: seconds(r.Duration.Seconds())}
		first, _, _ := strings.Cut(r.Message, "\n")
		switch r.Status {
		case StatusFail:
			c.Failure = &junitProblem{Message: clip(first, 500), Text: r.Message}
			suite.Failures++
		case StatusError:
			c.Error = &junitProblem{Message: clip(first, 500), Text: r.Message}
			suite.Errors++
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := junitSuites{Name: "plugboard conformance", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }
