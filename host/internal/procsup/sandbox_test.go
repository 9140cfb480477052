package procsup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/internal/sandbox"
)

// startAndWait starts argv (confined by policy when not nil), collects its
// output and waits for the end.
func startAndWait(tb testing.TB, dir string, policy *sandbox.Policy, argv ...string) (Result, string) {
	tb.Helper()
	var out strings.Builder
	p, err := Start(context.Background(), Spec{Dir: dir, Argv: argv, Sandbox: policy}, func(_ Stream, line []byte) {
		out.Write(line)
		out.WriteByte('\n')
	})
	if err != nil {
		tb.Fatal(err)
	}
	<-p.Done()
	return p.Result(), out.String()
}

// TestSandboxedChild: a child with a Sandbox runs confined — its program
// resolved in PATH, its directory writable, a file beside it unreadable —
// and keeps the supervision procsup gives every child (its output, its
// exit status).
func TestSandboxedChild(t *testing.T) {
	if st := sandbox.Probe(); !st.Available {
		t.Skip(st.Reason)
	}
	work, secret := t.TempDir(), filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("host secret\n"), 0o644)
	policy := &sandbox.Policy{ReadWrite: []string{work}, ReadOnly: sandbox.SystemReadOnly(), Devices: sandbox.StandardDevices()}
	res, out := startAndWait(t, work, policy, "bash", "-c", "echo made > mine && cat mine; cat "+secret+"; exit 3")
	if res.ExitCode != 3 || !strings.Contains(out, "made") || strings.Contains(out, "host secret") ||
		!strings.Contains(out, "Permission denied") {
		t.Fatalf("confined child: exit %d, output:\n%s", res.ExitCode, out)
	}
	res, out = startAndWait(t, work, nil, "bash", "-c", "cat "+secret)
	if res.ExitCode != 0 || !strings.Contains(out, "host secret") {
		t.Fatalf("unconfined control: exit %d, output:\n%s", res.ExitCode, out)
	}
}

// BenchmarkProcessStart times a child from Start until it has ended, for
// /bin/true: the launcher's cost is the difference between the two.
func BenchmarkProcessStart(b *testing.B) {
	work := b.TempDir()
	for _, c := range []struct {
		name   string
		policy *sandbox.Policy
	}{
		{"sandbox", &sandbox.Policy{ReadWrite: []string{work}, ReadOnly: sandbox.SystemReadOnly(), Devices: sandbox.StandardDevices()}},
		{"no-sandbox", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.policy != nil && !sandbox.Probe().Available {
				b.Skip(sandbox.Probe().Reason)
			}
			for b.Loop() {
				if res, out := startAndWait(b, work, c.policy, "true"); res.ExitCode != 0 {
					b.Fatalf("exit %d: %s", res.ExitCode, out)
				}
			}
		})
	}
}
