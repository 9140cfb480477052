// Command tasks-write is the plugboard plugin serving the task tools that
// change tasks (capability board.write): create_task, update_task and
// delete_task. The tools live in plugins/internal/taskapi.
package main

import (
	"github.com/plugboard/plugboard/plugins/internal/taskapi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

func init() {
	sdk.Plugin("tasks-write", "1.0.0", "Task board writes: create, update and delete tasks.")
	taskapi.RegisterWrite()
}

func main() {}
