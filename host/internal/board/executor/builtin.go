package executor

// Builtin returns the built-in profiles, freshly built so a caller may change
// them. Every agent gets its prompt on stdin where its CLI reads it there:
// an argv element is capped at 128 KiB on Linux and a prompt that starts
// with '-' would be read as a flag. DEFAULT runs unattended with the CLI's
// own auto-approval, because the board runs agents in a throwaway worktree
// with nobody at a terminal to answer a prompt; PLAN, where a CLI has a
// read-only mode, lets an agent look without changing anything.
func Builtin() []Profile {
	return []Profile{
		shellProfile(),
		claudeProfile(),
		codexProfile(),
		geminiProfile(),
		ampProfile(),
		opencodeProfile(),
		cursorProfile(),
		qwenProfile(),
		copilotProfile(),
		droidProfile(),
	}
}

// shellProfile runs the prompt itself as a bash script in the worktree. The
// script goes in as `bash -c` rather than on stdin: bash reads a stdin
// script as it runs, so any command in it that reads stdin (cat, read, ssh)
// would swallow the rest of the script; with -c the script is fixed before
// it starts and its stdin is only what the caller gives it.
func shellProfile() Profile {
	return Profile{
		Executor:       "SHELL",
		Description:    "Runs the prompt as a bash script in the worktree.",
		Binary:         "bash",
		DefaultVariant: DefaultVariantName,
		OutputFormat:   FormatLines,
		Variants: map[string]Variant{
			"DEFAULT": {Argv: []string{"bash", "-c", PlaceholderPrompt}},
		},
	}
}

// claudeProfile: verified with `claude --help` and headless runs of Claude
// Code 2.1.330: -p/--print (reads the prompt from stdin), --output-format
// stream-json (which -p requires --verbose with),
// --dangerously-skip-permissions, --permission-mode
// {acceptEdits,auto,bypassPermissions,manual,dontAsk,plan} and
// --resume=<session id>. As root the CLI refuses
// --dangerously-skip-permissions unless the environment declares a sandbox
// (IS_SANDBOX=1), which only the operator can vouch for (docs/DECISIONS.md).
func claudeProfile() Profile {
	base := []string{"claude", "-p", "--output-format=stream-json", "--verbose"}
	resume := "--resume=" + PlaceholderAgentSessionID
	yolo := resumable(StdinPrompt, join(base, "--dangerously-skip-permissions"), resume)
	yolo.RootRequiresEnv = "IS_SANDBOX"
	return Profile{
		Executor:       "CLAUDE_CODE",
		State:          []string{".claude", ".claude.json", ".claude.json.backup", ".cache/claude", ".local/share/claude", ".local/state/claude"},
		Description:    "Anthropic Claude Code in print mode, streaming JSON events.",
		Binary:         "claude",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		OutputFormat:   FormatClaudeStreamJSON,
		VerifiedWith:   "@anthropic-ai/claude-code 2.1.330",
		// An agent run must not update the CLI under the board's feet.
		Env:           map[string]string{"DISABLE_AUTOUPDATER": "1"},
		ResumeMissing: []string{"No conversation found with session ID"},
		Variants: map[string]Variant{
			"DEFAULT": yolo,
			"PLAN":    resumable(StdinPrompt, join(base, "--permission-mode=plan"), resume),
			// Print mode has nobody to ask, so under the manual mode a tool
			// call the user's settings do not already allow is refused: the
			// user's own allow-list is the approval.
			"APPROVALS": resumable(StdinPrompt, join(base, "--permission-mode=manual"), resume),
		},
	}
}

// codexProfile: verified with `codex exec --help` and headless runs of Codex
// CLI 0.169.0 (flags first from openai/codex docs/exec.md): `codex exec --json`, --sandbox workspace-write|read-only (what replaced
// the deprecated --full-auto), --skip-git-repo-check, a prompt of "-" read
// from stdin, and `codex exec resume <SESSION_ID> -`. Parent flags go
// before `resume` because --sandbox is not a global flag of exec.
func codexProfile() Profile {
	variant := func(sandbox string) Variant {
		base := []string{"codex", "exec", "--json", "--sandbox", sandbox, "--skip-git-repo-check"}
		return Variant{
			Argv:   join(base, "-"),
			Resume: join(base, "resume", PlaceholderAgentSessionID, "-"),
			Stdin:  StdinPrompt,
		}
	}
	return Profile{
		Executor:       "CODEX",
		State:          []string{".codex"},
		Description:    "OpenAI Codex CLI `codex exec`, streaming JSONL events.",
		Binary:         "codex",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		OutputFormat:   FormatCodexJSON,
		VerifiedWith:   "@openai/codex 0.169.0",
		ResumeMissing:  []string{"no rollout found for thread id"},
		Variants: map[string]Variant{
			"DEFAULT": variant("workspace-write"),
			"PLAN":    variant("read-only"),
		},
	}
}

// geminiProfile: verified with `gemini --help` and headless runs of Gemini
// CLI 0.61.0: headless when stdin is not a terminal (the piped text is the
// prompt), --output-format stream-json, --approval-mode
// default|auto_edit|yolo|plan, -r/--resume <session id>, and --skip-trust:
// without it every fresh worktree is an untrusted folder, where the CLI
// overrides the approval mode and then exits 55.
func geminiProfile() Profile {
	base := []string{"gemini", "--output-format", "stream-json", "--skip-trust", "--approval-mode"}
	resume := []string{"--resume", PlaceholderAgentSessionID}
	return Profile{
		Executor:       "GEMINI",
		State:          []string{".gemini"},
		Description:    "Google Gemini CLI in headless mode, streaming JSON events.",
		Binary:         "gemini",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		OutputFormat:   FormatGeminiStreamJSON,
		VerifiedWith:   "@google/gemini-cli 0.61.0",
		ResumeMissing:  []string{"Error resuming session", "No previous sessions found"},
		Variants: map[string]Variant{
			"DEFAULT":   resumable(StdinPrompt, join(base, "yolo"), resume...),
			"PLAN":      resumable(StdinPrompt, join(base, "plan"), resume...),
			"APPROVALS": resumable(StdinPrompt, join(base, "default"), resume...),
		},
	}
}

// ampProfile: flags from ampcode.com/news/streaming-json and the Amp owner's
// manual: --execute with --stream-json (Claude Code compatible events),
// --dangerously-allow-all, and `amp threads continue <thread id>` to resume;
// execute mode reads the prompt from stdin.
func ampProfile() Profile {
	flags := []string{"--execute", "--stream-json", "--dangerously-allow-all"}
	return Profile{
		Executor:       "AMP",
		State:          []string{".config/amp", ".local/share/amp", ".cache/amp"},
		Description:    "Sourcegraph Amp in execute mode, streaming Claude-compatible JSON.",
		Binary:         "amp",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		OutputFormat:   FormatClaudeStreamJSON,
		Variants: map[string]Variant{
			"DEFAULT": {
				Argv:   join([]string{"amp"}, flags...),
				Resume: join([]string{"amp", "threads", "continue", PlaceholderAgentSessionID}, flags...),
				Stdin:  StdinPrompt,
			},
		},
	}
}

// opencodeProfile: verified with `opencode run --help` and headless runs of
// OpenCode 1.18.33: `opencode run --format json` (raw JSON events), -s/--session
// <id> to continue, --agent plan; run appends piped stdin to the message.
// Without --auto, run rejects every permission request itself, so DEFAULT
// passes it. --print-logs at WARN puts the CLI's errors on stderr as they
// happen: its JSON stream says nothing while it retries an unreachable
// provider for minutes.
func opencodeProfile() Profile {
	base := []string{"opencode", "run", "--format", "json", "--print-logs", "--log-level", "WARN"}
	resume := []string{"--session", PlaceholderAgentSessionID}
	return Profile{
		Executor:       "OPENCODE",
		State:          []string{".config/opencode", ".local/share/opencode", ".local/state/opencode", ".cache/opencode"},
		Description:    "OpenCode `opencode run`, raw JSON events.",
		Binary:         "opencode",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		OutputFormat:   FormatOpenCodeJSON,
		VerifiedWith:   "opencode-ai 1.18.33",
		ResumeMissing:  []string{"Session not found"},
		Variants: map[string]Variant{
			"DEFAULT": resumable(StdinPrompt, join(base, "--auto"), resume...),
			// The plan agent may not edit; without --auto whatever else it
			// asks permission for is refused.
			"PLAN": resumable(StdinPrompt, join(base, "--agent", "plan"), resume...),
		},
	}
}

// cursorProfile: flags from cursor.com/docs/cli (output-format and parameters
// reference): -p/--print (inferred from piped stdin, which carries the
// prompt), --output-format stream-json, -f/--force to run commands unless
// denied, --mode=plan, --resume <chat id>.
func cursorProfile() Profile {
	base := []string{"cursor-agent", "-p", "--output-format=stream-json"}
	return Profile{
		Executor:       "CURSOR_AGENT",
		State:          []string{".cursor", ".config/cursor"},
		Description:    "Cursor Agent CLI in print mode, streaming JSON events.",
		Binary:         "cursor-agent",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		OutputFormat:   FormatClaudeStreamJSON,
		Variants: map[string]Variant{
			"DEFAULT": resumable(StdinPrompt, join(base, "--force"), "--resume="+PlaceholderAgentSessionID),
			"PLAN":    resumable(StdinPrompt, join(base, "--mode=plan"), "--resume="+PlaceholderAgentSessionID),
		},
	}
}

// qwenProfile: verified with `qwen --help` and headless runs of Qwen Code
// 0.24.4 (flags first from QwenLM/qwen-code docs/users/features/headless.md):
// stdin as the prompt, --output-format stream-json (the
// Claude Code envelope: system/assistant/user/result), --approval-mode
// plan|default|auto-edit|yolo, --resume <session id>.
func qwenProfile() Profile {
	base := []string{"qwen", "--output-format", "stream-json", "--approval-mode"}
	return Profile{
		Executor:       "QWEN_CODE",
		State:          []string{".qwen"},
		Description:    "Qwen Code in headless mode, streaming Claude-compatible JSON.",
		Binary:         "qwen",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		OutputFormat:   FormatClaudeStreamJSON,
		VerifiedWith:   "@qwen-code/qwen-code 0.24.4",
		ResumeMissing:  []string{"No saved session found"},
		Variants: map[string]Variant{
			"DEFAULT":   resumable(StdinPrompt, join(base, "yolo"), "--resume", PlaceholderAgentSessionID),
			"PLAN":      resumable(StdinPrompt, join(base, "plan"), "--resume", PlaceholderAgentSessionID),
			"APPROVALS": resumable(StdinPrompt, join(base, "default"), "--resume", PlaceholderAgentSessionID),
		},
	}
}

// copilotProfile: flags from docs.github.com "GitHub Copilot CLI programmatic
// reference" and `copilot --help`: -p/--prompt (required for non-interactive
// mode, so the prompt goes in argv), --allow-all-tools (required by -p),
// --no-color, --resume <session id>. The prompt is one `--prompt=` element
// so a leading '-' cannot be taken for a flag.
func copilotProfile() Profile {
	flags := []string{"--prompt=" + PlaceholderPrompt, "--allow-all-tools", "--no-color"}
	return Profile{
		Executor:       "COPILOT",
		State:          []string{".copilot", ".config/github-copilot"},
		Description:    "GitHub Copilot CLI in programmatic mode (plain text output).",
		Binary:         "copilot",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		OutputFormat:   FormatLines,
		Variants: map[string]Variant{
			"DEFAULT": {
				Argv:   join([]string{"copilot"}, flags...),
				Resume: join([]string{"copilot", "--resume=" + PlaceholderAgentSessionID}, flags...),
			},
		},
	}
}

// droidProfile: flags from docs.factory.ai (CLI reference and Droid Exec
// overview): `droid exec` reads piped stdin as the prompt, -o/--output-format
// stream-json, --auto low|medium|high (without it exec stays read-only),
// -s/--session-id <id> to continue.
func droidProfile() Profile {
	base := []string{"droid", "exec", "--output-format", "stream-json"}
	return Profile{
		Executor:       "DROID",
		State:          []string{".factory"},
		Description:    "Factory Droid `droid exec`, streaming JSON events.",
		Binary:         "droid",
		DefaultVariant: DefaultVariantName,
		SupportsMCP:    true,
		// Droid's stream is its own shape; recorded line by line until it
		// has a normaliser.
		OutputFormat: FormatLines,
		Variants: map[string]Variant{
			"DEFAULT": resumable(StdinPrompt, join(base, "--auto", "high"), "--session-id", PlaceholderAgentSessionID),
			"PLAN":    resumable(StdinPrompt, base, "--session-id", PlaceholderAgentSessionID),
		},
	}
}

// resumable is a variant whose follow-up is its own argv plus resumeArgs.
func resumable(stdin string, argv []string, resumeArgs ...string) Variant {
	return Variant{Argv: argv, Resume: join(argv, resumeArgs...), Stdin: stdin}
}

// join returns a new slice of base followed by more; base is never aliased.
func join(base []string, more ...string) []string {
	out := make([]string, 0, len(base)+len(more))
	return append(append(out, base...), more...)
}
