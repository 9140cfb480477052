// Package tasks owns the shapes agents see through the task tools and the
// agent tools (mail, the agent's own status and task, log_decision), and
// the enum-like string types and values their fields use. It is their one
// definition, shared by both sides of the board host function
// (abi.FuncBoard): the plugins that serve the tools (plugins/internal/taskapi,
// plugins/agents) generate the tools' schemas from these types and decode
// the board's answers into them, and the host (host/internal/board, host/internal/boardapi,
// host/internal/mail, host/internal/audit) answers with them.
//
// A field's json tag is its name on the wire; its jsonschema tag is the
// description agents read in the tool's schema. Tags are plain strings: the
// package imports nothing outside the standard library (abi's rule), and
// jsonschema-go reads the tags in the plugins, which generate the schemas
// (see plugins/internal/taskapi for the enums, bounds and rules added
// there).
//
// It holds three kinds of type:
//
//   - tool inputs (…In) and outputs (…Out, and the structs they hold): what
//     an agent sends a tool and gets back. The board takes most tools'
//     inputs as its operation's arguments and answers most with the tool's
//     output itself.
//   - board arguments (…Args) where a plugin sends the board something other
//     than the tool's input: the input without request_id, which stays with
//     the host's idempotency (CreateTaskArgs, StartArgs, FollowUpArgs,
//     RequestChangesArgs).
//   - board answers (Board…) where the tool reshapes what the board returns:
//     log entries as they are stored (BoardLogs), a file slice that leaves
//     fields empty rather than null (BoardFile), mail as stored (BoardMail,
//     BoardInbox).
//
// Ids and timestamps are plain strings: output schemas say their formats in
// words ("(UUID)", "(RFC3339)"), and the input schemas give every *_id
// argument but request_id the uuid format by its name. Enum values are
// untyped constants, so the same constant serves a named type here and the
// host's plain-string storage and arguments alike.
package tasks
