// Command tasks-control is the plugboard plugin serving the task tools that
// start and stop agents and close reviews (capability board.control):
// start_task_attempt, follow_up, stop_attempt, approve_attempt (merges the
// attempt's branch) and request_changes. The tools live in
// plugins/internal/taskapi.
package main

import (
	"github.com/plugboard/plugboard/plugins/internal/taskapi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

func init() {
	sdk.Plugin("tasks-control", "1.0.0", "Task board control: start attempts, send or queue follow-ups, stop attempts, approve (merge) or send back reviewed attempts.")
	taskapi.RegisterControl()
}

func main() {}
