// Package executor knows the coding agents a board can hand a task to: it
// owns their launch profiles as data (which program, which argv for each
// variant, how a follow-up resumes the agent's own session, which output
// format it speaks) and the normalisers that turn an agent's output lines
// into log entries for the board's transcript.
//
// It only builds command lines and reads output. Spawning the process,
// choosing its working directory, its environment, killing it, and storing
// entries or transcripts belong to the caller: nothing here starts a
// process, touches the database or writes a file. The one thing it looks at
// outside itself is PATH, to say whether an agent's program is installed,
// and even that goes through a LookPath the caller can replace.
//
// Profiles come from Builtin and may be added to or replaced by a user JSON
// file (see Load). Each built-in launches its CLI in the non-interactive,
// machine-readable mode that CLI documents; the comment beside each names
// where its flags come from.
//
// Normalisers are fed line by line (see Normalizer) so a caller can stream
// entries while the agent runs; they keep memory bounded whatever the agent
// prints, never fail on malformed input, and are safe to feed from separate
// stdout and stderr readers. There is one per output format: Claude Code's
// stream (also Amp's, Qwen Code's and Cursor Agent's), Codex's, Gemini
// CLI's and OpenCode's JSON events, and plain lines for everything else.
// All of them read stderr alike: stack frames make no entry, retry notices
// and the CLIs' routine notices are warnings (see IsWarning), log lines go
// by their level, and anything else is an error. Each also keeps the
// agent's own account of a failure (FailureReason): its last error, or
// its last warning when it reported no error.
package executor
