package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
)

// callCommand is the call row of the command table.
func callCommand(fs *flag.FlagSet) runFunc {
	var hf hostFlags
	hf.register(fs)
	progress := fs.Bool("progress", true, "print the tool's progress reports on stderr")
	return func(ctx context.Context, in *invocation) error {
		if err := in.nargs(1, 2); err != nil {
			return err
		}
		return call(ctx, in, &hf, *progress)
	}
}

// call makes one call through the pipeline and prints its result.
func call(ctx context.Context, in *invocation, hf *hostFlags, progress bool) error {
	stdout, stderr := in.stdout, in.stderr
	tool := in.args[0]
	argsJSON := json.RawMessage("{}")
	if len(in.args) == 2 {
		argsJSON = json.RawMessage(in.args[1])
		if !json.Valid(argsJSON) {
			return usageError("arguments are not valid JSON: %s", in.args[1])
		}
	}
	if a, ok := hf.throughAttempt(); ok {
		return callThroughAttempt(ctx, in, a, tool, argsJSON, progress)
	}
	if hf.logLevel == "info" {
		hf.logLevel = "warn" // one call: keep stderr for what matters
	}
	h, err := hf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer h.Close(context.WithoutCancel(ctx))
	var report func(abi.ProgressRequest)
	if progress {
		report = func(p abi.ProgressRequest) { printProgress(stderr, p) }
	}
	res := h.Call(ctx, tool, argsJSON, report)
	out := res.Structured
	if out == nil {
		items := make([]any, 0, len(res.Content))
		for _, c := range res.Content {
			if c.Type == abi.ContentText {
				items = append(items, c.Text)
			} else {
				items = append(items, c) // image, audio, resource: the item as MCP sends it
			}
		}
		out, _ = json.Marshal(map[string]any{"content": items})
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(out)
	}
	fmt.Fprintln(stdout, pretty.String())
	if err := waitForAttempts(ctx, h, stderr); err != nil {
		return err
	}
	if res.IsError() {
		return &exitError{code: 1, err: errSilent}
	}
	return nil
}

// printProgress prints one progress report of a call on stderr.
func printProgress(stderr io.Writer, p abi.ProgressRequest) {
	if p.Total > 0 {
		fmt.Fprintf(stderr, "progress %.0f/%.0f %s\n", p.Progress, p.Total, p.Message)
	} else {
		fmt.Fprintf(stderr, "progress %.0f %s\n", p.Progress, p.Message)
	}
}

// waitForAttempts keeps a one-shot call in the foreground while processes
// it started (start_task_attempt, follow_up) run: they belong to the
// process that supervises them, and leaving would stop them. It prints
// each attempt's end; Ctrl-C stops them (closing the host does).
func waitForAttempts(ctx context.Context, h *plughost.Host, stderr io.Writer) error {
	b := h.OpenedBoard()
	if b == nil || !b.Busy() {
		return nil
	}
	attempts := b.RunningAttempts()
	fmt.Fprintf(stderr, "note: attempt %s runs in this plugboard process, so call stays until it ends; Ctrl-C stops it.\n"+
		"      Watch from elsewhere with `plugboard attempt logs ID --follow`; `plugboard serve` keeps a board running without a terminal.\n",
		strings.Join(attempts, ", "))
	if err := b.WaitIdle(ctx); err != nil {
		fmt.Fprintln(stderr, "interrupted: stopping the attempt's processes")
		return &exitError{code: exitInterrupted, err: errSilent}
	}
	for _, id := range attempts {
		st, err := b.GetAttemptStatus(context.WithoutCancel(ctx), tasks.AttemptIn{AttemptID: id})
		if err != nil {
			continue
		}
		line := "attempt " + id + " ended: " + st.State
		if st.FailureSummary != nil {
			line += ": " + *st.FailureSummary
		}
		fmt.Fprintln(stderr, line)
	}
	return nil
}
