// Package procsup runs one child process for the task board (a coding agent,
// a setup script) and owns its life: the child leads its own session and
// process group, its stdout and stderr are delivered line by line with
// bounded memory, its exit is observed, and it can be stopped gracefully
// (SIGINT, then SIGKILL after a grace period) or by force.
//
// It must not touch the database, git or the meaning of the output: the
// board package stores lines, parses agent output and decides workflow from
// the OnLine callback and the Result.
//
// Lifetime rules, and why:
//
//   - The whole process group is the unit. Stopping signals the group, and
//     when the leader exits whatever is left in its group is killed, so
//     nothing the board no longer tracks keeps running in a worktree, and
//     pipes held by background children cannot keep Done from closing.
//   - The child gets SIGKILL when the host dies (Pdeathsig), because the
//     board marks such processes killed at its next start-up and a survivor
//     would contradict that. Linux sends that signal when the creating OS
//     thread exits, not the process (golang/go#27505), so each child is
//     forked from a goroutine locked to its own thread, which stays locked
//     until the child is reaped. Pdeathsig reaches only the leader; its
//     descendants are left for KillGroupIf at the next start-up.
//   - Signals go to the group only while the leader is unreaped: until then
//     its pid, and so the group id, cannot be reused by another process.
package procsup
