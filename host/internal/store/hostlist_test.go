package store

import (
	"context"
	"maps"
	"slices"
	"testing"
)

// TestHostLeasesAndRunningAttempts: on both stores every stored lease is
// listed by host and owner, and attempts with a running process are
// counted by the host holding them — an attempt with two running
// processes once, a finished one not at all.
func TestHostLeasesAndRunningAttempts(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		s := open()
		ctx := context.Background()
		for _, l := range [][2]string{{"o2", "host-b"}, {"o1", "host-a"}, {"o3", "host-a"}} {
			if err := s.HeartbeatHost(ctx, l[0], l[1]); err != nil {
				t.Fatal(err)
			}
		}
		leases, err := s.HostLeases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, l := range leases {
			if l.HeartbeatAt == "" || l.StartedAt == "" {
				t.Fatalf("lease without times: %+v", l)
			}
			order = append(order, l.HostID+"/"+l.Owner)
		}
		if want := []string{"host-a/o1", "host-a/o3", "host-b/o2"}; !slices.Equal(order, want) {
			t.Fatalf("leases %v, want %v", order, want)
		}

		_, task := board(t, s)
		attempt := func(host string, running ...bool) {
			a := Attempt{ID: NewID(), TaskID: task.ID, Branch: "pb/" + host, Executor: "SHELL", Variant: "DEFAULT", Dir: "/tmp/x",
				HostID: host, CreatedAt: Now(), UpdatedAt: Now()}
			if err := s.CreateAttempt(ctx, a, nil); err != nil {
				t.Fatal(err)
			}
			for _, r := range running {
				p := &Process{AttemptID: a.ID, RunReason: ReasonCodingAgent, Command: "x"}
				if err := s.CreateProcess(ctx, p); err != nil {
					t.Fatal(err)
				}
				if !r {
					if err := s.FinishProcess(ctx, p.ID, ProcCompleted, nil, ""); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		attempt("host-a", true, true)
		attempt("host-a", true)
		attempt("host-b", false)
		attempt("host-c", true, false)
		got, err := s.RunningAttemptsByHost(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{"host-a": 2, "host-c": 1}; !maps.Equal(got, want) {
			t.Fatalf("running attempts by host %v, want %v", got, want)
		}
	})
}
