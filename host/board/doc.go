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
// Every operation answers with the board's canonical JSON shapes, or an
// *abi.Envelope for an expected failure an agent can act on. It must not
// know about plugins, MCP or callers: host/boardapi exposes it to plugins,
// cmd/plugboard to people.
package board
