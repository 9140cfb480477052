package abi

import (
	"fmt"
	"slices"
)

// The agent types a manifest may say its tools are meant for
// (Manifest.Roles): the host's caller roles.
const (
	RoleSupervisor   = "SUPERVISOR"
	RoleOrchestrator = "ORCHESTRATOR"
	RoleWorker       = "WORKER"
)

var agentRoles = []string{RoleSupervisor, RoleOrchestrator, RoleWorker}

// AgentRoles returns every role Manifest.Roles may name, as a copy.
func AgentRoles() []string { return slices.Clone(agentRoles) }

// validateRoles checks Manifest.Roles: known roles, each once. A typo must
// fail the build, not leave a role the operator opted in to silently
// unmatched.
func (m *Manifest) validateRoles() []error {
	var errs []error
	for i, r := range m.Roles {
		switch {
		case !slices.Contains(agentRoles, r):
			errs = append(errs, fmt.Errorf("roles[%d]: %q is not an agent type (one of %v)", i, r, agentRoles))
		case slices.Index(m.Roles, r) < i:
			errs = append(errs, fmt.Errorf("roles[%d]: %q is declared twice", i, r))
		}
	}
	return errs
}
