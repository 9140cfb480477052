package e2e

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestIdempotencyE2E drives request_id deduplication through `plugboard
// serve` with testdata/plugins/nonce, whose keyed tool answers a fresh
// random nonce on every run: fifty parallel identical calls see one nonce,
// key reuse with other arguments is refused, and a retry after completion —
// also after a restart on the same data directory — is replayed.
func TestIdempotencyE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/nonce")
	data := t.TempDir()
	srv := startServer(t, dir, "--data", data)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type out struct {
		Nonce     string `json:"nonce"`
		Label     string `json:"label"`
		RequestID string `json:"request_id"`
	}
	// Compile first: the parallel calls below would spend it answering
	// request_in_progress.
	var warm out
	structured(t, srv.call(t, ctx, "nonce", map[string]any{"label": "warm-up"}), &warm)

	args := map[string]any{"label": "parallel <&>", "sleep_ms": 300, "request_id": "e2e-50"}
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		texts      = map[string]int{}
		nonces     = map[string]int{}
		inProgress int
	)
	for range 50 {
		wg.Go(func() {
			for ctx.Err() == nil {
				res, err := srv.session.CallTool(ctx, &mcp.CallToolParams{Name: "nonce", Arguments: args})
				if err != nil {
					t.Errorf("protocol error: %v", err)
					return
				}
				if res.IsError {
					env := clitest.EnvelopeOf(t, res)
					if env.Code != abi.CodeRequestInProgress || !env.Retryable || env.Details["request_id"] != "e2e-50" {
						t.Errorf("envelope %+v", env)
						return
					}
					mu.Lock()
					inProgress++
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				var o out
				structured(t, res, &o)
				mu.Lock()
				nonces[o.Nonce]++
				texts[clitest.Text(res)]++
				mu.Unlock()
				return
			}
		})
	}
	wg.Wait()
	if len(nonces) != 1 || len(texts) != 1 || inProgress == 0 {
		t.Fatalf("parallel calls: nonces %v, %d distinct texts, %d in-progress answers", nonces, len(texts), inProgress)
	}
	var first string
	for n, count := range nonces {
		if first = n; count != 50 {
			t.Fatalf("%d of 50 calls answered nonce %s", count, n)
		}
	}

	// Replay after completion: same nonce, same text.
	res := srv.call(t, ctx, "nonce", map[string]any{"request_id": "e2e-50", "sleep_ms": 300, "label": "parallel <&>"})
	var replay out
	structured(t, res, &replay)
	if replay.Nonce != first || replay.RequestID != "e2e-50" || texts[clitest.Text(res)] == 0 {
		t.Fatalf("replay %+v (%s), want nonce %s", replay, clitest.Text(res), first)
	}

	// The same key with other arguments: conflict, the plugin not called.
	env := clitest.EnvelopeOf(t, srv.call(t, ctx, "nonce", map[string]any{"label": "other", "request_id": "e2e-50"}))
	if env.Code != abi.CodeIdempotencyConflict || env.Retryable || env.Details["tool"] != "nonce" || env.Details["request_id"] != "e2e-50" ||
		env.Hint != "generate a new request_id for a different request; reuse a request_id only to retry the same arguments" {
		t.Fatalf("conflict %+v", env)
	}
	// A bad key names its field.
	env = clitest.EnvelopeOf(t, srv.call(t, ctx, "nonce", map[string]any{"request_id": ""}))
	if env.Code != abi.CodeInvalidArgument || env.Details["field"] != "request_id" {
		t.Fatalf("empty request_id: %+v", env)
	}
	// A failed call is not stored: its retry runs again.
	var failNonces []any
	for range 2 {
		env := clitest.EnvelopeOf(t, srv.call(t, ctx, "nonce", map[string]any{"fail": true, "request_id": "e2e-fail"}))
		failNonces = append(failNonces, env.Details["nonce"])
	}
	if failNonces[0] == failNonces[1] {
		t.Fatalf("a failed call was replayed: %v", failNonces)
	}

	// Records outlive the server: a restart on the same data replays.
	srv.session.Close()
	srv = startServer(t, dir, "--data", data)
	structured(t, srv.call(t, ctx, "nonce", args), &replay)
	if replay.Nonce != first {
		t.Fatalf("after a restart the call ran again: nonce %s, want %s", replay.Nonce, first)
	}
}

// TestIdempotencyEnvE2E: a TTL variable that is not a whole number of
// seconds stops serve at start-up with an error naming it.
func TestIdempotencyEnvE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cmd := exec.Command(buildtest.Binary(t), "serve", "--plugins", t.TempDir(), "--data", t.TempDir())
	cmd.Env = append(cmd.Environ(), "PLUGBOARD_IDEMPOTENCY_IN_PROGRESS_TTL_SECS"+"=1h")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PLUGBOARD_IDEMPOTENCY_IN_PROGRESS_TTL_SECS") {
		t.Fatalf("serve with a bad TTL: %v\n%s", err, out)
	}
}
