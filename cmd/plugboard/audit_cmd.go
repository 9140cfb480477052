package main

// plugboard audit tail prints the decision log (host/internal/audit): one compact
// line per tool call or deliberate decision, oldest first, and with
// --follow the calls that finish from then on.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
)

// auditLookback is how far before the newest finish a follower looks
// again: rows are stamped when a call finishes and committed a moment
// later, so one stamped earlier can appear after a later one.
const auditLookback = 5 * time.Second

func auditTailCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	agent := fs.String("agent", "", "only calls by this agent id")
	tool := fs.String("tool", "", "only calls of this tool")
	limit := fs.Int("limit", 20, "print the last N entries (1-1000)")
	follow := fs.Bool("follow", false, "keep printing calls as they finish, until Ctrl-C")
	asJSON := fs.Bool("json", false, "print one JSON object per entry")
	return func(ctx context.Context, in *invocation) error {
		if err := c.args(in, 0, 0); err != nil {
			return err
		}
		return auditTail(ctx, in, c, *agent, *tool, *limit, *follow, *asJSON)
	}
}

func auditTail(ctx context.Context, in *invocation, c *boardCmd, agent, tool string, limit int, follow, asJSON bool) error {
	stdout, stderr := in.stdout, in.stderr
	if limit < 1 || limit > 1000 {
		return usageError("--limit %d: want 1 to 1000", limit)
	}
	data, err := dataDir(c.data)
	if err != nil {
		return err
	}
	target := c.storeTarget()
	if target == "" {
		path := filepath.Join(data, "board.db")
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no board in %s (%w): give --data the directory plugboard serve uses, or --store its store", data, err)
		}
	} else if !config.IsPostgresURL(target) {
		if _, err := os.Stat(target); err != nil {
			return fmt.Errorf("no board at %s (%w): give --store the store plugboard serve uses", target, err)
		}
	}
	st, err := plughost.DecisionLog(ctx, data, target)
	if err != nil {
		return err
	}
	defer st.Close()

	p := &auditPrinter{w: stdout, json: asJSON}
	rows, err := st.Decisions(ctx, plughost.DecisionFilter{AgentID: agent, Tool: tool, Limit: limit})
	if err != nil {
		return err
	}
	slices.Reverse(rows)
	seen := map[string]string{} // id → finished_at, of finished rows printed
	cursor := plughost.Now()
	for _, r := range rows {
		p.row(r)
		if r.FinishedAt != nil {
			seen[r.ID] = *r.FinishedAt
			cursor = max(cursor, *r.FinishedAt)
		}
	}
	if !follow {
		if len(rows) == 0 && !asJSON {
			fmt.Fprintln(stderr, "no entries in the decision log yet")
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
		since := cursor
		if t, err := time.Parse(time.RFC3339Nano, cursor); err == nil {
			since = plughost.FormatTime(t.Add(-auditLookback))
		}
		rows, err := st.Decisions(ctx, plughost.DecisionFilter{AgentID: agent, Tool: tool, Limit: 1000, FinishedAfter: since})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, r := range rows {
			if _, done := seen[r.ID]; done {
				continue
			}
			p.row(r)
			seen[r.ID] = *r.FinishedAt
			cursor = max(cursor, *r.FinishedAt)
		}
		for id, at := range seen {
			if at < since {
				delete(seen, id)
			}
		}
	}
}

// auditPrinter prints decision-log rows.
type auditPrinter struct {
	w    io.Writer
	json bool
}

// row prints one row: "TIME AGENT(TYPE) TOOL STATUS DURATION [req=ID]
// SUMMARY", where SUMMARY is the error code and message, the result's
// compact JSON (shortened) or a decision's title.
func (p *auditPrinter) row(r plughost.Decision) {
	if p.json {
		b, err := json.Marshal(r)
		if err == nil {
			p.w.Write(append(b, '\n'))
		}
		return
	}
	agent := r.AgentID
	if agent == "" {
		agent = "-"
	}
	if r.AgentType != "" {
		agent += "(" + r.AgentType + ")"
	}
	tool := r.Tool
	if tool == "" {
		tool = "-"
	}
	duration := "-"
	if r.DurationMS != nil {
		duration = fmt.Sprintf("%dms", *r.DurationMS)
	}
	status := r.Status
	if r.Kind == plughost.DecisionKindDecision {
		status = "decision"
	}
	line := fmt.Sprintf("%s %s %s %s %s", auditTime(r.CreatedAt), agent, tool, status, duration)
	if r.RequestID != "" {
		line += " req=" + r.RequestID
	}
	switch {
	case r.Kind == plughost.DecisionKindDecision:
		line += " " + shorten(r.Title, 120)
	case r.Status == plughost.DecisionError:
		var env struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(r.Error, &env)
		line += " " + r.ErrorCode
		if env.Message != "" {
			line += ": " + shorten(oneLine(env.Message), 100)
		}
		if r.Attempts > 1 {
			line += fmt.Sprintf(" (%d attempts)", r.Attempts)
		}
	case r.Status == plughost.DecisionOK && len(r.Result) > 0:
		line += " " + shorten(string(r.Result), 100)
		if r.Attempts > 1 {
			line += fmt.Sprintf(" (%d attempts)", r.Attempts)
		}
	}
	fmt.Fprintln(p.w, line)
}

// auditTime is a stored time as local "2006-01-02 15:04:05.000".
func auditTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}

// shorten cuts s to n runes, marking the cut with "…".
func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
