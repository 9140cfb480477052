// Command textdiff is the plugboard plugin serving text_diff: a unified diff
// (as GNU diff -u prints it) between two texts. The diff algorithm lives in
// internal/udiff; this file owns the tool's agent-facing surface: its
// schema, argument checks, progress reports and answer.
package main

import (
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/plugins/textdiff/internal/udiff"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Limits on the arguments.
const (
	maxTextBytes    = 4 << 20
	maxContextLines = 10000
	defaultContext  = 3
)

// Input is the arguments of text_diff.
type Input struct {
	OldText      string `json:"old_text" jsonschema:"the original text (the - side), as a string of lines separated by \\n; at most 4 MiB"`
	NewText      string `json:"new_text" jsonschema:"the changed text (the + side), same format as old_text; at most 4 MiB"`
	ContextLines *int   `json:"context_lines,omitempty" jsonschema:"unchanged lines shown around each change, 0 to 10000; default 3"`
	OldLabel     string `json:"old_label,omitempty" jsonschema:"name printed on the --- line, one line of text; default a"`
	NewLabel     string `json:"new_label,omitempty" jsonschema:"name printed on the +++ line, one line of text; default b"`
}

// Output is the answer of text_diff.
type Output struct {
	Diff      string `json:"diff" jsonschema:"the unified diff: ---/+++ header, then @@ -l,n +l,n @@ hunks of ' ', '-' and '+' lines, as diff -u --label prints it; empty when identical"`
	Added     int    `json:"added" jsonschema:"number of lines only in new_text (+ lines)"`
	Removed   int    `json:"removed" jsonschema:"number of lines only in old_text (- lines)"`
	Hunks     int    `json:"hunks" jsonschema:"number of @@ hunks in diff"`
	Identical bool   `json:"identical" jsonschema:"true when the texts are equal byte for byte; diff is then empty"`
}

const description = `Use when: you need the line-by-line differences between two versions of a text, as a unified diff (diff -u).
Required: old_text, new_text
Optional: context_lines (default 3), old_label (default "a"), new_label (default "b")
Next: read diff, or use added/removed/hunks to judge the size of the change; call again with context_lines 0 for a shorter diff.
Avoid: passing file paths instead of file contents; texts over 4 MiB each.`

func init() {
	sdk.Plugin("textdiff", "1.0.0", "Unified diffs between two texts.")
	sdk.Tool(sdk.ToolSpec{
		Name:        "text_diff",
		Title:       "Unified diff of two texts",
		Description: description,
		Annotations: &abi.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
		TimeoutMS:   30000,
	}, textDiff)
}

// textDiff reports progress on a scale of 100: 0-80 while comparing (large
// inputs only), 80-100 while formatting hunks.
func textDiff(c *sdk.Call, in Input) (Output, error) {
	if err := checkText("old_text", in.OldText); err != nil {
		return Output{}, err
	}
	if err := checkText("new_text", in.NewText); err != nil {
		return Output{}, err
	}
	context := defaultContext
	if in.ContextLines != nil {
		context = *in.ContextLines
		if context < 0 || context > maxContextLines {
			return Output{}, sdk.InvalidArgument("context_lines",
				fmt.Sprintf("context_lines is %d; it must be 0 to %d", context, maxContextLines),
				"Omit context_lines for 3, or pass 0 to 10000.")
		}
	}
	labelA, err := label("old_label", in.OldLabel, "a")
	if err != nil {
		return Output{}, err
	}
	labelB, err := label("new_label", in.NewLabel, "b")
	if err != nil {
		return Output{}, err
	}

	if in.OldText == in.NewText {
		c.Progress(100, 100, "texts are identical")
		return Output{Identical: true}, nil
	}

	reporting := c.Context().Progress
	var onCompare func(done, total int)
	if reporting {
		onCompare = func(done, total int) {
			c.Progress(float64(80*done/total), 100, "comparing lines")
		}
	}
	d := udiff.Compute(in.OldText, in.NewText, context, onCompare)
	hunks := d.Hunks()
	c.Progress(80, 100, fmt.Sprintf("compared: %d hunks, +%d -%d lines", len(hunks), d.Added, d.Removed))

	out := udiff.AppendHeader(nil, labelA, labelB)
	every := max(len(hunks)/10, 1)
	for i, h := range hunks {
		out = d.AppendHunk(out, h)
		if reporting && (i+1)%every == 0 && i+1 < len(hunks) {
			c.Progress(float64(80+20*(i+1)/len(hunks)), 100, fmt.Sprintf("formatted hunk %d of %d", i+1, len(hunks)))
		}
	}
	c.Progress(100, 100, "done")
	return Output{
		Diff:      string(out),
		Added:     d.Added,
		Removed:   d.Removed,
		Hunks:     len(hunks),
		Identical: d.Identical(),
	}, nil
}

func checkText(field, text string) error {
	if len(text) <= maxTextBytes {
		return nil
	}
	return sdk.InvalidArgument(field,
		fmt.Sprintf("%s is %d bytes; the limit is %d (4 MiB)", field, len(text), maxTextBytes),
		"Diff smaller pieces, e.g. one file or section per call.").
		WithDetail("limit_bytes", maxTextBytes).WithDetail("size_bytes", len(text))
}

func label(field, value, def string) (string, error) {
	if value == "" {
		return def, nil
	}
	if strings.ContainsAny(value, "\r\n") {
		return "", sdk.InvalidArgument(field, field+" contains a line break",
			"Pass "+field+" as a single line, such as a file name.")
	}
	return value, nil
}

func main() {}
