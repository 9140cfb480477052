// Command tasks-control is the plugboard plugin serving the task tools that
// start and stop agents (capability board.control): start_task_attempt,
// follow_up and stop_attempt. The tools live in plugins/internal/taskapi.
package main

import (
	"github.com/plugboard/plugboard/plugins/internal/taskapi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

func init() {
	sdk.Plugin("tasks-control", "1.0.0", "Task board control: start attempts, send or queue follow-ups, stop attempts.")
	taskapi.RegisterControl()
}

func main() {}
