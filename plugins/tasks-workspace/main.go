// Command tasks-workspace is the plugboard plugin serving the task tools
// that read attempt worktrees (capability workspace.read):
// get_attempt_changes, get_attempt_patch and get_attempt_file. The tools
// live in plugins/internal/taskapi.
package main

import (
	"github.com/plugboard/plugboard/plugins/internal/taskapi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

func init() {
	sdk.Plugin("tasks-workspace", "1.0.0", "Attempt worktree reads: changes, patches, files (bounded).")
	taskapi.RegisterWorkspace()
}

func main() {}
