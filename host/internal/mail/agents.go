package mail

import "github.com/plugboard/plugboard/host/internal/policy"

// FromPolicy is the agent directory of the operator's agents file: a
// *policy.Policy, or the *policy.Live of a server that reloads it (each
// lookup then reads the file in force).
func FromPolicy(p interface {
	Agent(id string) (policy.Agent, bool)
}) Agents {
	return AgentsFunc(func(id string) (AgentInfo, bool) {
		a, ok := p.Agent(id)
		if !ok {
			return AgentInfo{}, false
		}
		return AgentInfo{ID: a.ID, Type: a.Type, Supervisor: a.Supervisor, TaskID: a.TaskID, AttemptID: a.AttemptID}, true
	})
}
