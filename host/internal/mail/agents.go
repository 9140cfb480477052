package mail

import "github.com/plugboard/plugboard/host/internal/policy"

// FromPolicy is the agent directory of the operator's agents file.
func FromPolicy(p *policy.Policy) Agents {
	return AgentsFunc(func(id string) (AgentInfo, bool) {
		a, ok := p.Agent(id)
		if !ok {
			return AgentInfo{}, false
		}
		return AgentInfo{ID: a.ID, Type: a.Type, Supervisor: a.Supervisor, TaskID: a.TaskID, AttemptID: a.AttemptID}, true
	})
}
