package board

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/plugboard/plugboard/host/internal/store"
)

// TestCompactLine: control bytes and bytes that are not UTF-8 are stored
// in a size proportional to the line, runs as a count; text, tabs,
// terminal colours and UTF-8 pass unchanged.
func TestCompactLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, <html> & tabs\there", "plain text, <html> & tabs\there"},
		{"\x1b[31mred\x1b[0m", "\x1b[31mred\x1b[0m"},
		{"é ✓ 日本", "é ✓ 日本"},
		{"50%\r60%\r", "50%\r60%\r"},
		{"a\x00b", "a␀b"},
		{"\x00\x00\x00", "␀␀␀"},
		{strings.Repeat("\x00", 65536), "␀×65536"},
		{"x" + strings.Repeat("\x07", 4) + "y\x7f", "x␇×4y␡"},
		{strings.Repeat("\r", 10), "␍×10"},
		{"bad \xff\xfe\xfd\xfc\xfb bytes", "bad �×5 bytes"},
		{"one \xff bad", "one � bad"},
		{"\x00\x01\x00", "␀␁␀"},
	} {
		if got := string(compactLine([]byte(c.in))); got != c.want {
			t.Errorf("compactLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// What is stored is valid UTF-8 JSON no larger than 3 bytes a byte,
	// whatever the input; a run of one byte is a few bytes whatever its
	// length.
	worst := bytes.Repeat([]byte{0x00, 0x01}, 32<<10)
	out := compactLine(worst)
	enc, err := encodeEntry(string(out))
	if err != nil || !utf8.Valid(out) || len(enc) > 3*len(worst)+2 {
		t.Fatalf("alternating control bytes: %d bytes in, %d stored, %v", len(worst), len(enc), err)
	}
	enc, _ = encodeEntry(string(compactLine(bytes.Repeat([]byte{0}, 1<<20))))
	if len(enc) > 16 {
		t.Fatalf("1 MiB of NUL bytes stored as %d bytes: %s", len(enc), enc)
	}
	// Nothing to compact: the same slice, no copy.
	line := []byte("nothing to do")
	if got := compactLine(line); &got[0] != &line[0] {
		t.Fatal("a clean line was copied")
	}
	enc, _ = encodeEntry("<a href=\"x\">&</a>")
	if string(enc) != `"<a href=\"x\">&</a>"` {
		t.Fatalf("HTML escaped: %s", enc)
	}
}

// TestLogCaps: a process's log keeps its cap, an attempt's logs theirs;
// what a cap drops is read (the process ends normally) and counted, and
// the markers say so on stdout, on stderr and in the normalized log.
func TestLogCaps(t *testing.T) {
	ctx := context.Background()
	const processMax, attemptMax = 64 << 10, 96 << 10
	b := openBoard(t, Config{Logs: &LogLimits{ProcessMax: processMax, AttemptMax: attemptMax}})
	repo := gitRepo(t, "app", map[string]string{"README.md": "hello\n"})
	p, err := b.CreateProject(ctx, "demo", []RepoSpec{{Path: repo}})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{b: b, project: p, repo: repo}
	task := f.task(t, "flood", `yes 'an ordinary line of output' | head -c 1M; yes 'a line on stderr' | head -c 256K >&2; echo end`)
	res := f.start(t, task.TaskID)
	if st := settle(t, b, res.AttemptID); st.State != StateCompleted {
		t.Fatalf("a capped run: %+v", st)
	}
	st := b.store.(*store.Store)
	used, err := st.AttemptLogBytes(ctx, res.AttemptID)
	if err != nil || used > processMax+4<<10 {
		t.Fatalf("the process's log takes %d bytes (%v), over its %d cap and the markers", used, err, processMax)
	}
	raw, err := b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Channel: "raw", Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := entryContents(t, raw.Entries)
	// Markers when the cap was reached (stdout, stderr), then the totals.
	if len(got) != 4 || !strings.HasPrefix(got[0], "[plugboard] stdout dropped from here on") ||
		!strings.HasPrefix(got[1], "[plugboard] stderr dropped from here on") ||
		!strings.Contains(got[2], "KiB of stdout (") || !strings.Contains(got[3], "256.0 KiB of stderr (15421 lines) dropped") ||
		!strings.Contains(got[3], "the cap of 64 KiB per process") {
		t.Fatalf("raw tail = %q", got)
	}
	norm, _ := b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Limit: 1})
	var last struct {
		EntryType string         `json:"entry_type"`
		Content   string         `json:"content"`
		Metadata  map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(norm.Entries[0].Entry, &last); err != nil || last.EntryType != "system_message" ||
		last.Metadata["level"] != "warning" || last.Metadata["cap"] != "process" || !strings.Contains(last.Content, "of stderr") {
		t.Fatalf("normalized tail = %s (%v)", norm.Entries[0].Entry, err)
	}

	// A follow-up has what is left of the attempt's budget.
	fu, err := b.FollowUp(ctx, FollowUpArgs{Action: ActionSend, AttemptID: res.AttemptID, Prompt: `yes 'more output' | head -c 256K`})
	if err != nil {
		t.Fatal(err)
	}
	if st := settle(t, b, res.AttemptID); st.LatestExecutionProcessID == nil || *st.LatestExecutionProcessID != *fu.ExecutionProcessID {
		t.Fatalf("follow-up: %+v", st)
	}
	if used, _ := st.AttemptLogBytes(ctx, res.AttemptID); used > attemptMax+8<<10 {
		t.Fatalf("the attempt's logs take %d bytes, over its %d cap and the markers", used, attemptMax)
	}
	raw, _ = b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Channel: "raw", Limit: 1})
	if got := entryContents(t, raw.Entries); len(got) != 1 || !strings.Contains(got[0], "of stdout") || !strings.Contains(got[0], "per attempt") {
		t.Fatalf("follow-up's raw tail = %q", got)
	}
}
