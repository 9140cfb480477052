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
	"github.com/plugboard/plugboard/host/board"
	"github.com/plugboard/plugboard/host/dispatch"
)

func cmdCall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var hf hostFlags
	hf.register(fs)
	progress := fs.Bool("progress", true, "print the tool's progress reports on stderr")
	if err := fs.Parse(reorder(args)); err != nil {
		return &exitError{code: 2, err: errSilent}
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError("call needs TOOL and optionally 'JSON' arguments")
	}
	tool := fs.Arg(0)
	argsJSON := json.RawMessage("{}")
	if fs.NArg() == 2 {
		argsJSON = json.RawMessage(fs.Arg(1))
		if !json.Valid(argsJSON) {
			return usageError("arguments are not valid JSON: %s", fs.Arg(1))
		}
	}
	if hf.logLevel == "info" {
		hf.logLevel = "warn" // one call: keep stderr for what matters
	}
	h, err := hf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer h.close(context.WithoutCancel(ctx))
	req := dispatch.Request{Tool: tool, Arguments: argsJSON, Caller: h.caller}
	if *progress {
		req.Progress = func(p abi.ProgressRequest) {
			if p.Total > 0 {
				fmt.Fprintf(stderr, "progress %.0f/%.0f %s\n", p.Progress, p.Total, p.Message)
			} else {
				fmt.Fprintf(stderr, "progress %.0f %s\n", p.Progress, p.Message)
			}
		}
	}
	res := h.dispatcher.Call(ctx, req)
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

// waitForAttempts keeps a one-shot call in the foreground while processes
// it started (start_task_attempt, follow_up) run: they belong to the
// process that supervises them, and leaving would stop them. It prints
// each attempt's end; Ctrl-C stops them (closing the host does).
func waitForAttempts(ctx context.Context, h *host, stderr io.Writer) error {
	b := h.board.opened()
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
		st, err := b.GetAttemptStatus(context.WithoutCancel(ctx), board.AttemptArgs{AttemptID: id})
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

// reorder moves flags ahead of positional arguments so that
// "call TOOL '{}' --plugins DIR" works as people type it.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			if !bytes.ContainsRune([]byte(a), '=') && i+1 < len(args) && takesValue(a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func takesValue(flagName string) bool {
	switch flagName {
	case "-progress", "--progress", "-json", "--json", "-warm", "--warm":
		return false
	}
	return true
}
