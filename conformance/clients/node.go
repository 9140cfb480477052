package clients

import (
	"context"
	"path/filepath"

	"github.com/plugboard/plugboard/conformance/internal/npminstall"
)

// Install runs conformance/clients/install.sh of the repository at root
// (npm ci against the committed lockfile, only when it changed) and returns
// the directory holding node_modules with the clients and Node.js.
func Install(ctx context.Context, root string) (string, error) {
	return npminstall.Run(ctx, root, "conformance/clients/install.sh", "the MCP clients", "node")
}

// node is the Node.js binary of an installation.
func node(dir string) string { return filepath.Join(dir, "node_modules", ".bin", "node") }
