package clients

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Install runs conformance/clients/install.sh of the repository at root
// (npm ci against the committed lockfile, only when it changed) and returns
// the directory holding node_modules with the clients and Node.js.
func Install(ctx context.Context, root string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "conformance", "clients", "install.sh"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("install the MCP clients: %v\n%s", err, errb.String())
	}
	dir := strings.TrimSpace(out.String())
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "node")); err != nil {
		return "", fmt.Errorf("install the MCP clients: no node in %s: %v", dir, err)
	}
	return dir, nil
}

// node is the Node.js binary of an installation.
func node(dir string) string { return filepath.Join(dir, "node_modules", ".bin", "node") }
