// Package gitops owns every git operation the task board performs:
// validating a repository; creating and removing an attempt's repositories
// (a clone of the user's repository per attempt, its branch, and the host's
// own git dir over the clone); measuring what an attempt changed against its
// base commit, with the size guards that decide whether those changes are
// small enough to hand on; and merging an attempt back into the user's
// repository.
//
// It talks to git only through the git command (never a library). Where
// git runs decides whose configuration it obeys, which is the trust
// boundary this package keeps (see Clone): in the user's repository, git
// runs as the user's git would, hooks and configuration included, since no
// attempt can write them; over an attempt's files, git runs only through the
// host's git dir, with no system or global configuration, so nothing an
// attempt wrote (config, hooks, fsmonitor, filters or diff drivers named
// by attributes, includes) is run or read as configuration, and that git
// dir's configuration is written anew from the host's template before
// every run, in case an agent reached it. Every git gets only an allowlist
// of the host's environment: no PLUGBOARD_* variable, no secret. The
// content it hands on (patches, merged commits) is refused when a file is
// a hard link or on another file system, whose content may be any file's.
//
// It must not touch the board's database, and it must not start any
// process other than git. Reading an attempt's changes must leave the
// attempt's files, its index and its git dir exactly as they were: an agent
// may be running git there at the same time.
package gitops
