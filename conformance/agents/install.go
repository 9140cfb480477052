package agents

import (
	"context"

	"github.com/plugboard/plugboard/conformance/internal/npminstall"
)

// Install runs conformance/agents/install.sh of the repository at root (npm
// ci against the committed lockfile, only when it changed) and returns the
// directory whose node_modules/.bin holds the CLIs and Node.js.
func Install(ctx context.Context, root string) (string, error) {
	return npminstall.Run(ctx, root, "conformance/agents/install.sh", "the coding-agent CLIs",
		"node", "claude", "codex", "gemini", "opencode", "qwen")
}
