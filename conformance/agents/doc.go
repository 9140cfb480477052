// Package agents checks the built-in executor profiles against the real
// coding-agent CLIs: Claude Code, Codex, Gemini CLI, OpenCode and Qwen Code
// at the versions each profile records (the profile's verified_with),
// pinned by package-lock.json beside this file and installed by install.sh
// into .cache/agent-clis (Install).
//
// Its test drives the real plugboard binary over MCP, as an agent would:
// each variant of each profile starts an attempt and sends a follow-up, and
// without credentials every run must reach the CLI's own authentication or
// network error — no flag refused, the CLI's reason in the normalised log
// and in failure_summary — and a stopped attempt must leave no process.
// With a credential in the environment (ANTHROPIC_API_KEY, GEMINI_API_KEY,
// OPENAI_API_KEY) the same test expects that agent's runs to complete.
package agents
