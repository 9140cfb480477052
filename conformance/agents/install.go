package agents

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Install runs conformance/agents/install.sh of the repository at root (npm
// ci against the committed lockfile, only when it changed) and returns the
// directory whose node_modules/.bin holds the CLIs and Node.js.
func Install(ctx context.Context, root string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "conformance", "agents", "install.sh"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("install the coding-agent CLIs: %v\n%s", err, errb.String())
	}
	dir := strings.TrimSpace(out.String())
	for _, bin := range []string{"node", "claude", "codex", "gemini", "opencode", "qwen"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", bin)); err != nil {
			return "", fmt.Errorf("install the coding-agent CLIs: no %s in %s: %v", bin, dir, err)
		}
	}
	return dir, nil
}
