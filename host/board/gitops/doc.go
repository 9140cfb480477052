// Package gitops owns every git operation the task board performs:
// validating a repository, creating and removing the worktree (and branch) of
// an attempt, and measuring what an attempt changed against its base commit,
// with the size guards that decide whether those changes are small enough to
// hand on.
//
// It talks to git only through the git command (never a library), so the
// board behaves exactly like the git the user runs, hooks and attributes
// included. It must not touch the board's database, and it must not start any
// process other than git. Reading an attempt's changes must leave the
// worktree's files and its index exactly as they were: an agent may be
// running git in that worktree at the same time.
package gitops
