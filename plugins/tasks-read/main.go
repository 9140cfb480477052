// Command tasks-read is the plugboard plugin serving the read-only task
// tools (capability board.read): list_projects, list_repos, list_executors,
// list_tasks, get_task, list_task_attempts, get_attempt_status,
// tail_attempt_logs, tail_session_messages, review_queue and get_context
// (listed only inside an attempt). The tools live in
// plugins/internal/taskapi.
package main

import (
	"github.com/plugboard/plugboard/plugins/internal/taskapi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

func init() {
	sdk.Plugin("tasks-read", "1.0.0", "Task board reads: projects, repos, executors, tasks, attempts, status, logs, transcripts, the review queue.")
	taskapi.RegisterRead()
}

func main() {}
