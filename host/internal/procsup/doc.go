// Package procsup runs one child process for the task board (a coding agent,
// a setup script) and owns its life and its descendants': the child leads
// its own session and process group, its stdout and stderr are delivered
// line by line with bounded memory, its exit is observed, and it can be
// stopped gracefully (SIGINT, then SIGKILL after a grace period) or by
// force.
//
// It must not touch the database, git or the meaning of the output: the
// board package stores lines, parses agent output and decides workflow from
// the OnLine callback and the Result.
//
// Lifetime rules, and why:
//
//   - The whole process tree is the unit: the child and everything it
//     starts, whatever it does with sessions, process groups and double
//     forks. Where the host can make cgroup v2 directories (and the kernel
//     has cgroup.kill), each child is born into a cgroup of its own, which
//     its descendants cannot leave; elsewhere the tree is found in /proc by
//     process group, session, parentage and a marker in the environment
//     (TreeEnv) that descendants inherit. See cgroup.go and tree.go.
//   - When the leader exits, whatever is left of its tree is killed, so
//     nothing the board no longer tracks keeps running in a worktree, and
//     pipes held by background children cannot keep Done from closing. A
//     graceful Stop interrupts the process group (the agent decides what
//     its children do); the kill that may follow, and a forced Stop, end the
//     tree.
//   - Nothing outlives the host. The child gets SIGKILL when the host dies
//     (Pdeathsig). Linux sends that signal when the creating OS thread
//     exits, not the process (golang/go#27505), so each child is forked
//     from a goroutine locked to its own thread, which stays locked until
//     the child is reaped. Pdeathsig reaches only the leader; the rest of a
//     tree in a cgroup is ended by the host's watchdog as soon as the host
//     is gone, and in every case by KillTree at the next start-up, from
//     the Handle the board stored.
//   - Signals go to the group only while the leader is unreaped: until then
//     its pid, and so the group id, cannot be reused by another process.
//   - A child with Spec.Sandbox is confined before it runs (see package
//     sandbox): it is started as the host's own executable in launcher
//     mode, which restricts itself and executes the program in place, so
//     the pid, session, cgroup and parent-death signal set up here are the
//     program's, and the confinement is every descendant's.
//   - Children are not the host's confidants: the host turns itself
//     non-dumpable before the first one starts, so they cannot read its
//     environment or memory through /proc, and Spec.NoInheritEnv keeps its
//     environment from being inherited at all.
package procsup
