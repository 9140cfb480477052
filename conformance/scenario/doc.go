// Package scenario owns running data-driven scenario packs against a live
// host: a specification's WHEN/THEN scenarios written as JSON data, each run
// through the real `plugboard serve` over stdio with the plugins under test,
// on an ephemeral board. It speaks to the server only as an MCP client does
// (tools/list, tools/call) and sets the board up only as a person does
// (host/internal/board: a project over a git repository); it must not know plugin
// internals, so a team that replaces a first-party plugin can prove with the
// same pack that the spec still holds. `plugboard conformance --scenarios`
// runs it through CLI (Main is the same as a function); conformance/scenarios
// holds the packs.
//
// # Running
//
// Run loads a pack and runs its scenarios, two at a time by default. Each
// scenario gets a temporary directory holding a data directory (its
// compiled/ a link to one compiled-code cache for the whole run, so plugins
// compile once), a git repository committed on branch main, a project over
// it created with host/internal/board, optionally an idle attempt, and its own
// server: `plugboard serve --data DIR --plugins ... SERVE_ARGS`, its stderr
// kept as server.log. The server's environment drops PLUGBOARD_DATA,
// PLUGBOARD_ATTEMPT_ID and GIT_DIR-like variables, so a run inside an
// attempt does not leak into the scenarios. A scenario passes when every
// step holds; it fails at the first step that does not, with a message
// naming the step, the call and its arguments, what was expected and what
// came back (truncated); it is an error when it could not be set up.
//
// # Pack format
//
//	{
//	  "name": "first-party", "version": "1.0.0", "description": "...", "spec": "spec-mcp-task-tools.md",
//	  "setup": {SETUP},                       // defaults of every scenario
//	  "fragments": {"wait_settled": [STEP]},  // step lists a step inlines with {"include": "wait_settled"}
//	  "scenarios": [{
//	    "id": "attempt-is-failed",            // unique; [a-z0-9._-]
//	    "requirement": "Attempt status tool", // the spec requirement's title
//	    "name": "Attempt is failed",          // the spec scenario's title
//	    "when": "...", "then": "...",         // quoted from the spec, shown on failure
//	    "setup": {SETUP},                     // overrides the pack's, field by field
//	    "steps": [STEP]
//	  }]
//	}
//
// SETUP: "project" (name, default "demo"), "repo" (directory and repo name,
// default "app"), "files" ({path: content} committed first; merged with the
// pack's), "setup_script" and "cleanup_script" (the repo's), "serve_args"
// (appended to the pack's, e.g. ["--guard", "safe"]), "attempt"
// ({"task_title": "Idle", "context": bool}: an attempt with no session and
// no process, recorded on a new task before the server starts; with context
// the server runs inside it, `serve --attempt`, so get_context is listed),
// "timeout_ms" (a step's wait and retries, default 30000), "interval_ms"
// (polling, default 30), "call_timeout_ms" (one call, default 60000),
// "scenario_timeout_ms" (the whole scenario, default 120000).
//
// STEP: exactly one of
//
//	{"call": TOOL, "args": {...}}  a tools/call
//	{"tools": {"select": [NAME], "described": [NAME|"*"], "instances": [{"tool", "schema": "input"|"output", "value", "valid"}]}}
//	{"open_gate": NAME}            release scripts waiting in ${wait.NAME}
//	{"sleep_ms": N}
//	{"include": FRAGMENT}
//
// with "name" (a label for messages), and for calls: "expect" (default: a
// success), "capture" ({var: PATH}, read from the result), "wait" ({"until":
// EXPECT, "timeout_ms", "interval_ms"}: the same call is repeated until its
// result meets until, then checked against expect), "repeat" or "parallel"
// (n calls in sequence or at once, each checked; "same": [PATH] must be
// equal across them; captures read the first), "retry_on" ([code]: a call
// answered with one of these error codes is repeated, e.g.
// request_in_progress). A tools step checks the document {"tools": [...],
// "names": [...], "by_name": {NAME: tool}} (restricted to "select", which
// fails when a tool is missing); "described" requires a description on every
// property of the tools' input and output schemas; each instance must be
// accepted (valid) or refused by the tool's schema (github.com/google/jsonschema-go).
//
// EXPECT: {"ok": bool, "error_code": CODE, "hint_contains": [TEXT],
// "fields": [CHECK]}. A success is validated against the tool's outputSchema
// from tools/list (always, also while waiting). An expected error must be
// an envelope (isError, its text the JSON of code, message, hint; never
// structuredContent that fails the outputSchema); the fields then apply to
// the envelope (e.g. "details.field").
//
// CHECK: {"path": PATH, "each": bool, OP: ARG, ...}; every op must hold.
// Ops: equals, not_equals, one_of [..], exists bool, type (string, number,
// integer, boolean, null, array, object, or a list), format (uuid, rfc3339),
// regex (Go syntax), length / min_length / max_length (string bytes, list
// elements, object members), contains / not_contains (substring, list
// element, object member), json_contains / json_not_contains (in the value's
// compact JSON), set (the same elements in any order), gt / gte / lt / lte,
// ascending / descending (strictly ordered list). "each" applies the ops to
// every value a [*] path selects, or every element of a selected list.
//
// PATH (JSONPath-lite): "$" or "" the whole result; "a.b"; "list[0]",
// "list[-1]"; "list[*].id" (every element: a list); "list[key=value].x" (the
// first element whose member key, as text, is value). A missing path fails
// every op but "exists": false.
//
// Variables: "${name}" in any string of args, checks, paths, hints, serve
// args and scripts. A string that is exactly one reference takes the
// variable's JSON value (number, null, object); elsewhere it is spliced in
// as text. "${name+1}" and "${name-1}" do integer arithmetic; "$${" is a
// literal "${". Setup defines project_id, project_name, repo_id, repo_name,
// repo_path, and with an attempt task_id and attempt_id; captures add or
// replace variables. "${gate.NAME}" is a file that does not exist until
// {"open_gate": NAME}, and "${wait.NAME}" a shell loop waiting for it, so a
// script (a SHELL task description, a setup_script) runs until the scenario
// releases it; every gate opens when a scenario ends. An undefined variable
// fails the step at once, naming the variables defined.
package scenario
