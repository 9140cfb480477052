// Package board is the task engine behind the task tools: it creates
// attempts (per repo, a clone whose git dir is the agent's, and the host's
// git dir over it; see gitops.Clone), runs setup scripts, coding agents and cleanup
// scripts as supervised child processes, captures and normalises their
// output, runs the follow-up queue, stops processes, and derives the views
// the spec defines (attempt state, latest attempt/session/process, the
// list_tasks attempt summary, log and transcript pages, changes).
//
// It composes store (state), gitops (git), executor (profiles and
// normalisers), procsup (processes) and workspace (bounded file reads).
// Every operation takes and answers the shapes agents see, defined once in
// abi/tasks (the board's names for them are aliases: StatusResult is
// tasks.StatusOut), or fails with an *abi.Envelope for an expected failure
// an agent can act on; store rows and git results become those shapes at
// the board's edge (shapes.go). It must not know about plugins, MCP or
// callers: host/internal/boardapi exposes it to plugins, cmd/plugboard to people.
package board
