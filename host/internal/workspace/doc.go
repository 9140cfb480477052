// Package workspace gives agents bounded, read-only access to the worktrees
// of one attempt. It owns the agent-facing path rules and the reads they
// lead to; the get_attempt_file tool is a thin layer over ReadFile.
//
// Every path an agent passes is repo-prefixed, "<repo>/<path inside the
// repo>", because an attempt may span several repos and the prefix is the
// only thing that tells them apart. The rest of the path is resolved
// through an [os.Root] opened on that repo's worktree, so no spelling of a
// path (.., absolute paths, symlinks to files or directories outside, a
// sibling directory whose name shares the worktree's prefix) reaches
// anything outside it. The package also resolves symlinks itself, before
// os.Root does, so that it can tell an agent "that path is outside the
// workspace" (a refusal with a hint, not an error) rather than guess from
// os.Root's unexported error values; os.Root stays the enforcement, the
// package's own walk only classifies.
//
// A regular file with more than one link, or on another device than its
// worktree, is refused like a symlink leading outside: a hard link shares
// its content with a file that may lie anywhere on the file system (an
// agent can link a key of the user's into its worktree), and another device
// came in through a mount. The check is made on the file opened, so no
// swap after it changes what is read.
//
// Reads are bounded: one ReadAt of at most max_bytes plus a few lookahead
// bytes, never the whole file, so a huge or growing file costs an agent a
// page, not the host its memory.
//
// The .git file or directory of a worktree (and any nested one) is refused
// like a path outside the workspace. It is not the attempt's work product:
// it holds git's internals and, in .git/config, remote URLs that may carry
// credentials; for a linked worktree the .git file points into the main
// repository, which is shared by every attempt. Agents learn about changes
// through get_attempt_changes and get_attempt_patch, not by reading git's
// files. This refusal is a policy, not a boundary: a process racing symlink
// swaps inside the worktree could still steer a read into .git, whereas no
// race can steer one outside the worktree, which os.Root guarantees.
//
// The package must not touch git, the database, or write anything: it
// never creates, modifies or deletes a file, runs no git command and knows
// nothing of tasks or attempts beyond the repo names and directories it is
// given. Which files changed, and their patches, belong to other packages.
package workspace
