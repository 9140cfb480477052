package abi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestManifestRoles(t *testing.T) {
	base := Manifest{Tools: []Tool{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	m := base
	m.Roles = []string{RoleWorker, RoleOrchestrator}
	if err := m.Validate(); err != nil {
		t.Fatalf("valid roles refused: %v", err)
	}
	b, _ := json.Marshal(m)
	var back Manifest
	if err := json.Unmarshal(b, &back); err != nil || len(back.Roles) != 2 || back.Roles[0] != RoleWorker || !strings.Contains(string(b), `"roles":["WORKER","ORCHESTRATOR"]`) {
		t.Errorf("roles do not round-trip: %s", b)
	}
	if b, _ := json.Marshal(base); strings.Contains(string(b), "roles") {
		t.Errorf("a manifest without roles writes them: %s", b)
	}
	for _, tc := range []struct {
		roles []string
		want  string
	}{
		{[]string{"WORKR"}, `roles[0]: "WORKR" is not an agent type`},
		{[]string{"worker"}, `roles[0]: "worker" is not an agent type`},
		{[]string{RoleWorker, RoleWorker}, `roles[1]: "WORKER" is declared twice`},
	} {
		m := base
		m.Roles = tc.roles
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("roles %v: Validate() = %v, want %q", tc.roles, err, tc.want)
		}
	}
	if got := AgentRoles(); len(got) != 3 || got[0] != RoleSupervisor {
		t.Errorf("AgentRoles() = %v", got)
	}
}
