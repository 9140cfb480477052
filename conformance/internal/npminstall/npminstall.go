// Package npminstall runs the install scripts of the conformance kit's
// npm-installed tools (the MCP clients of the client matrix, the
// coding-agent CLIs): each script installs its pinned lockfile into a
// cache directory only when the lockfile changed, and prints that
// directory. It owns the one way the Go side calls them and checks what
// they installed.
package npminstall

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Run runs the bash script at root/script and returns the directory it
// prints, once each of bins is in its node_modules/.bin. what names the
// tools in errors ("the MCP clients").
func Run(ctx context.Context, root, script, what string, bins ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, script))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("install %s: %v\n%s", what, err, errb.String())
	}
	dir := strings.TrimSpace(out.String())
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", bin)); err != nil {
			return "", fmt.Errorf("install %s: no %s in %s: %v", what, bin, dir, err)
		}
	}
	return dir, nil
}
