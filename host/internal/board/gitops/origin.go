package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SyncOrigin points the clone's refs/remotes/origin/<branch> at the tip of
// branch in Source, so that the agent sees the repository's current target
// branch as origin/<branch> without fetching: in its sandbox the agent
// cannot read Source's git dir (its configuration, refs, other attempts'
// branches), only the objects its clone borrows, which hold that tip.
//
// The ref is written as a loose ref file through an os.Root on the clone's
// git dir — never by running git there, whose configuration is the
// agent's — and a loose ref wins over a packed one. A branch Source does
// not have is not an error: there is nothing to show.
func SyncOrigin(ctx context.Context, c Clone, branch string) error {
	if err := checkArg("branch name", branch); err != nil {
		return fmt.Errorf("gitops: sync origin: %w", err)
	}
	if strings.Contains(branch, "..") {
		return fmt.Errorf("gitops: sync origin: branch name %q", branch)
	}
	if c.Source == "" {
		return nil
	}
	c, err := c.abs()
	if err != nil {
		return err
	}
	tip, err := resolveBranch(ctx, c.Source, branch)
	if err != nil {
		if exitCode(err) == 1 || strings.Contains(err.Error(), "does not exist") {
			return nil
		}
		return err
	}
	root, err := os.OpenRoot(filepath.Join(c.Dir, ".git"))
	if err != nil {
		return fmt.Errorf("gitops: sync origin of %s: %w", c.Dir, err)
	}
	defer root.Close()
	ref := filepath.Join("refs", "remotes", "origin", filepath.FromSlash(branch))
	if err := root.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		return fmt.Errorf("gitops: sync origin of %s: %w", c.Dir, err)
	}
	tmp := ref + ".plugboard-tmp"
	if err := root.WriteFile(tmp, []byte(tip+"\n"), 0o644); err != nil {
		return fmt.Errorf("gitops: sync origin of %s: %w", c.Dir, err)
	}
	if err := root.Rename(tmp, ref); err != nil {
		root.Remove(tmp)
		return fmt.Errorf("gitops: sync origin of %s: %w", c.Dir, err)
	}
	return nil
}
