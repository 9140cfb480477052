package audit_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/store"
)

type cappedRecord struct {
	Truncated bool   `json:"truncated"`
	Bytes     int    `json:"bytes"`
	SHA256    string `json:"sha256"`
	Prefix    string `json:"prefix"`
}

func TestCapped(t *testing.T) {
	big := []byte(`{"text":"` + strings.Repeat("é", 5000) + `"}`)
	out := audit.Capped(big, 1024)
	var rec cappedRecord
	sum := sha256.Sum256(big)
	if err := json.Unmarshal(out, &rec); err != nil || !rec.Truncated || rec.Bytes != len(big) || rec.SHA256 != hex.EncodeToString(sum[:]) ||
		!strings.HasPrefix(string(big), rec.Prefix) || len(rec.Prefix) == 0 || len(rec.Prefix) > audit.CapPrefix || len(out) > 1024 {
		t.Fatalf("Capped = %s (%v)", out, err)
	}
	// Characters whose escapes are six bytes each: the prefix shrinks so
	// the record stays within the limit.
	ctrl := []byte(`"` + strings.Repeat("\x01", 4000) + `"`)
	if out := audit.Capped(ctrl, 400); len(out) > 400 || !json.Valid(out) {
		t.Fatalf("Capped of control characters = %d bytes: %s", len(out), out)
	}
	// A limit below the record's own size keeps no prefix.
	if out := audit.Capped(big, 10); json.Unmarshal(out, &rec) != nil || rec.Prefix != "" {
		t.Fatalf("Capped with a tiny limit = %s", out)
	}
}

// TestAuditCapsPayloads: an input, result or error over PayloadMax is
// stored capped; a sensitive field is masked before (neither the prefix
// nor the hash is of the secret); payloads within the cap are kept whole.
func TestAuditCapsPayloads(t *testing.T) {
	st := openStore(t)
	l := audit.NewWithOptions(audit.Static(st), nil, audit.Options{PayloadMax: 512})
	ctx := context.Background()
	secret := strings.Repeat("S", 2000)
	input := json.RawMessage(fmt.Sprintf(`{"a":"%s","password":"%s"}`, strings.Repeat("a", 1000), secret))
	id := l.Invoked(ctx, dispatch.AuditCall{Tool: "t", Input: input, Sensitive: []string{"password"}})
	l.Finished(ctx, id, dispatch.AuditOutcome{Result: json.RawMessage(`"` + strings.Repeat("r", 4000) + `"`)})
	small := l.Invoked(ctx, dispatch.AuditCall{Tool: "t", Input: json.RawMessage(`{"a":1}`)})
	l.Finished(ctx, small, dispatch.AuditOutcome{Envelope: abi.NewEnvelope(abi.CodeInternal, strings.Repeat("m", 3000), "")})
	l.Close()

	r, err := st.GetDecision(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var in, res cappedRecord
	masked := audit.Mask(input, []string{"password"})
	sum := sha256.Sum256(masked)
	if json.Unmarshal(r.Input, &in) != nil || !in.Truncated || in.Bytes != len(masked) || in.SHA256 != hex.EncodeToString(sum[:]) ||
		strings.Contains(string(r.Input), "SSSS") {
		t.Fatalf("input stored as %s", r.Input)
	}
	if json.Unmarshal(r.Result, &res) != nil || !res.Truncated || res.Bytes != 4002 || len(r.Result) > 512 {
		t.Fatalf("result stored as %s", r.Result)
	}
	s, err := st.GetDecision(ctx, small)
	if err != nil || string(s.Input) != `{"a":1}` || !strings.Contains(string(s.Error), `"truncated":true`) || len(s.Error) > 512 {
		t.Fatalf("small row %+v, %v", s, err)
	}
}

// TestAuditRetention: rows older than MaxAge go, then the oldest beyond
// MaxBytes; the newest stay. New prunes once the store is open.
func TestAuditRetention(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	old := store.FormatTime(time.Now().Add(-48 * time.Hour))
	for i := range 5 {
		if err := st.InsertDecision(ctx, store.Decision{ID: fmt.Sprintf("old-%d", i), Kind: store.DecisionKindCall, Tool: "t",
			Status: store.DecisionOK, CreatedAt: old}); err != nil {
			t.Fatal(err)
		}
	}
	l := audit.NewWithOptions(audit.Static(st), nil, audit.Options{MaxAge: 24 * time.Hour, MaxBytes: 10 * 1024})
	var ids []string
	for i := range 40 {
		id := l.Invoked(ctx, dispatch.AuditCall{Tool: "t", Input: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("p", 200)))})
		l.Finished(ctx, id, dispatch.AuditOutcome{Result: json.RawMessage(`{}`)})
		ids = append(ids, id)
		time.Sleep(time.Millisecond) // distinct created_at
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	rows, bytes, err := st.DecisionLogSize(ctx)
	if err != nil || bytes > 10*1024 || rows == 0 || rows >= 40 {
		t.Fatalf("after pruning: %d rows, %d bytes, %v", rows, bytes, err)
	}
	if _, err := st.GetDecision(ctx, "old-0"); err == nil {
		t.Error("a row older than MaxAge survived")
	}
	if _, err := st.GetDecision(ctx, ids[len(ids)-1]); err != nil {
		t.Errorf("the newest row was pruned: %v", err)
	}
	if _, err := st.GetDecision(ctx, ids[0]); err == nil {
		t.Error("the oldest row beyond the budget survived")
	}
	l.Close()
}

// BenchmarkDecisionLogBytes measures what a call costs the decision log
// on disk (board.db and its WAL, checkpointed), in bytes per call
// (db-B/call), for a 1 KiB echo and a 3.9 MiB one, with payloads stored
// whole (uncapped: what the log did before it was bounded) and capped at
// the default 1 KiB. Run it with a fixed count, e.g. -benchtime 200x (the
// uncapped 3.9 MiB case writes 8 MB a call).
func BenchmarkDecisionLogBytes(b *testing.B) {
	for _, size := range []int{1 << 10, 3900 << 10} {
		for _, c := range []struct {
			name string
			max  int
		}{{"uncapped", 0}, {"capped", audit.DefaultPayloadMax}} {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, c.name), func(b *testing.B) {
				dir := b.TempDir()
				path := filepath.Join(dir, "board.db")
				st, err := store.Open(context.Background(), path)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				fileSize := func() int64 {
					st.Checkpoint(context.Background())
					var n int64
					for _, p := range []string{path, path + "-wal"} {
						if fi, err := os.Stat(p); err == nil {
							n += fi.Size()
						}
					}
					return n
				}
				l := audit.NewWithOptions(audit.Static(st), nil, audit.Options{PayloadMax: c.max})
				ctx := context.Background()
				payload := json.RawMessage(`{"text":"` + strings.Repeat("x", size) + `"}`)
				caller := &abi.Caller{ID: "w1", Role: "WORKER"}
				before := fileSize()
				b.ResetTimer()
				for range b.N {
					id := l.Invoked(ctx, dispatch.AuditCall{Caller: caller, Tool: "echo", Input: payload})
					l.Finished(ctx, id, dispatch.AuditOutcome{Result: payload, Duration: time.Millisecond, Attempts: 1})
				}
				l.Close()
				b.StopTimer()
				b.ReportMetric(float64(fileSize()-before)/float64(b.N), "db-B/call")
			})
		}
	}
}

// BenchmarkDecisionLogRetention writes b.N capped 1 KiB echo calls into a
// log bounded to 8 MiB, pruning every 5,000 calls (as the pruner does
// every minute), and reports the database's size at the end (db-MiB) and
// the rows kept: the file stops growing once pruning frees pages for the
// new rows. Run it with e.g. -benchtime 100000x.
func BenchmarkDecisionLogRetention(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "board.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	opts := audit.DefaultOptions()
	opts.MaxBytes = 8 << 20
	l := audit.NewWithOptions(audit.Static(st), nil, opts)
	ctx := context.Background()
	payload := json.RawMessage(`{"text":"` + strings.Repeat("x", 1<<10) + `"}`)
	caller := &abi.Caller{ID: "w1", Role: "WORKER"}
	for i := range b.N {
		id := l.Invoked(ctx, dispatch.AuditCall{Caller: caller, Tool: "echo", Input: payload})
		l.Finished(ctx, id, dispatch.AuditOutcome{Result: payload, Duration: time.Millisecond, Attempts: 1})
		if (i+1)%5000 == 0 {
			_ = l.Flush(ctx)
			if _, err := l.Prune(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	l.Close()
	b.StopTimer()
	st.Checkpoint(ctx)
	var size int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	rows, _, _ := st.DecisionLogSize(ctx)
	b.ReportMetric(float64(size)/(1<<20), "db-MiB")
	b.ReportMetric(float64(rows), "rows")
}
