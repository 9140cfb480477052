package registry

import (
	"path/filepath"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// The first-party plugins serve the board: their tools are the only way
// an agent starts, approves or reads attempts, so an agent that calls
// approve_attempt must reach tasks-control and nothing else. Their names
// (and aliases) are reserved for them: a plugin may serve one only when
// it is the plugin named here and the operator pinned it under that name —
// its file is <name>.wasm in a plugin folder, or plugins.settings.<name>
// names its source. A plugin that declares the name of a first-party
// plugin in its manifest but sits in another file is not the one the
// operator installed under that name.
//
// The example plugins (echo, textdiff) are first-party too but serve
// nothing of the board; their names stay free for anyone's tools.
var reservedOwner = func() map[string]string {
	owners := map[string]string{}
	for plugin, names := range map[string][]string{
		"tasks-read": {abi.OpListProjects, abi.OpListRepos, abi.OpListExecutors, abi.OpListTasks, abi.OpGetTask,
			abi.OpListTaskAttempts, abi.OpGetAttemptStatus, abi.OpTailAttemptLogs, abi.OpTailSessionMessage,
			abi.OpReviewQueue, abi.OpGetContext},
		"tasks-write":     {abi.OpCreateTask, abi.OpUpdateTask, abi.OpDeleteTask},
		"tasks-control":   {abi.OpStartTaskAttempt, abi.OpFollowUp, abi.OpStopAttempt, abi.OpApproveAttempt, abi.OpRequestChanges},
		"tasks-workspace": {abi.OpGetAttemptChanges, abi.OpGetAttemptPatch, abi.OpGetAttemptFile},
		"agents": {abi.OpMailSend, abi.OpMailListInbox, abi.OpMailRead, abi.OpMailReply, abi.OpAgentGetStatus,
			abi.OpAgentGetTask, abi.OpLogDecision,
			"mcp__mail__send", "mcp__mail__list_inbox", "mcp__mail__read", "mcp__mail__reply",
			"mcp__agent__get_status", "mcp__agent__get_task", "mcp__system__log_decision"},
	} {
		for _, name := range names {
			owners[name] = plugin
		}
	}
	return owners
}()

// ReservedOwner returns the first-party plugin a tool name or alias is
// reserved for, and whether it is reserved at all.
func ReservedOwner(name string) (plugin string, ok bool) {
	plugin, ok = reservedOwner[name]
	return plugin, ok
}

// pinnedUnderName reports whether the operator installed the plugin of
// entry e, loaded from file, under the plugin's own name: a folder file
// named <name>.wasm, or a source (which is always served under its
// settings' name).
func pinnedUnderName(file string, e *fileEntry) bool {
	return e.origin != "" || strings.TrimSuffix(filepath.Base(file), ".wasm") == e.plugin.Name()
}
