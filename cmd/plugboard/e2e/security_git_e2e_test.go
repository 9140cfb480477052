package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The git trust boundary through `plugboard serve`: a real SHELL attempt
// plays the hostile agent, writing into its worktree and its git dir
// whatever git would run (config, hooks, attributes naming drivers, hard
// links), and the host's tools must neither run any of it nor serve what
// lies outside the worktree, nor let it reach the user's repository.

// evilKit is a command an attempt can name in git configuration (it
// appends its arguments to a marker file, so every run is seen) and the
// shell lines that install it everywhere git would look.
type evilKit struct {
	dir, cmd, marker, hooks string
}

func newEvilKit(t *testing.T) evilKit {
	t.Helper()
	dir := t.TempDir()
	k := evilKit{dir: dir, cmd: filepath.Join(dir, "evil.sh"), marker: filepath.Join(dir, "ran"), hooks: filepath.Join(dir, "hooks")}
	// With no arguments it is a filter (clean or smudge): it passes its
	// input through, so the agent's own git still works.
	script := fmt.Sprintf("#!/bin/sh\necho \"evil $*\" >> %q\nif [ $# -eq 0 ]; then exec cat; fi\nexit 0\n", k.marker)
	if err := os.WriteFile(k.cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return k
}

// ran reports what the marker recorded, "" when the command never ran.
func (k evilKit) ran() string {
	b, _ := os.ReadFile(k.marker)
	return string(b)
}

// hookLines writes a hook of every name git runs around the operations
// the host performs (and the user's next commands), each calling the
// command, into the directory dir, a shell word.
func (k evilKit) hookLines(dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mkdir -p %s\n", dir)
	for _, h := range []string{"post-checkout", "post-merge", "post-commit", "pre-commit", "commit-msg", "prepare-commit-msg",
		"reference-transaction", "post-index-change", "pre-auto-gc", "post-rewrite", "fsmonitor-watchman", "pre-push",
		"push-to-checkout", "post-update", "pre-receive", "update", "post-receive"} {
		p := dir + "/" + h
		fmt.Fprintf(&b, "printf '#!/bin/sh\\nexec %s hook-%s \"$@\"\\n' > %s && chmod +x %s\n", k.cmd, h, p, p)
	}
	return b.String()
}

// poisonScript is what the hostile agent runs in its worktree: every git
// setting that names a command, in each config file git reads for the
// worktree (the shared config, the worktree's config.worktree, an
// included file), hooks, and a committed .gitattributes that routes every
// file through the evil filter, diff and merge drivers. Its own git runs
// the command too; the marker is removed at the end, so only what runs
// afterwards counts.
func (k evilKit) poisonScript() string {
	inc := filepath.Join(k.dir, "evil.inc")
	var b strings.Builder
	b.WriteString("set -e\n")
	b.WriteString(k.hookLines(fmt.Sprintf("%q", k.hooks)))
	fmt.Fprintf(&b, "printf '[core]\\n\\tfsmonitor = %s\\n[diff \"evil\"]\\n\\ttextconv = %s\\n' > %q\n", k.cmd, k.cmd, inc)
	for _, kv := range [][2]string{
		{"filter.evil.clean", k.cmd}, {"filter.evil.smudge", k.cmd}, {"filter.evil.process", k.cmd},
		{"diff.evil.textconv", k.cmd}, {"diff.evil.command", k.cmd}, {"diff.external", k.cmd},
		{"merge.evil.driver", k.cmd + " %O %A %B"}, {"core.pager", k.cmd}, {"core.sshCommand", k.cmd},
		{"core.alternateRefsCommand", k.cmd}, {"uploadpack.packObjectsHook", k.cmd}, {"core.editor", k.cmd},
		{"sequence.editor", k.cmd}, {"gpg.program", k.cmd}, {"commit.gpgSign", "true"}, {"include.path", inc},
		{"core.hooksPath", k.hooks}, {"core.fsmonitor", k.cmd},
	} {
		fmt.Fprintf(&b, "git config %q %q\n", kv[0], kv[1])
	}
	b.WriteString("git config extensions.worktreeConfig true\n")
	fmt.Fprintf(&b, "git config --worktree core.fsmonitor %q\n", k.cmd)
	fmt.Fprintf(&b, "git config --worktree core.hooksPath %q\n", k.hooks)
	// Hooks and attributes in the git dir the worktree uses, too.
	b.WriteString(k.hookLines(`"$(git rev-parse --git-common-dir)/hooks"`))
	b.WriteString("mkdir -p \"$(git rev-parse --git-common-dir)/info\"\n")
	b.WriteString("printf '* filter=evil diff=evil merge=evil\\n' > \"$(git rev-parse --git-common-dir)/info/attributes\"\n")
	b.WriteString("printf '* filter=evil diff=evil merge=evil\\n' > .gitattributes\n")
	b.WriteString("git add .gitattributes\n")
	b.WriteString("git -c commit.gpgSign=false -c user.name=agent -c user.email=agent@example.com commit -q --no-verify -m attributes\n")
	b.WriteString("echo 'More docs.' >> README.md\necho 'notes' > NOTES.md\n")
	fmt.Fprintf(&b, "rm -f %q\n", k.marker)
	return b.String()
}

// TestSecurityGitHostNeverRunsAttemptConfig: an attempt configures git to
// run its command from every place git reads configuration, hooks and
// attributes; no call of the host's, read-only or approving, runs it.
func TestSecurityGitHostNeverRunsAttemptConfig(t *testing.T) {
	k := newEvilKit(t)
	sc := newScenario(t, unconfined)
	_, attemptID := sc.inReview("Poison git", k.poisonScript())
	// The attempt has ended: whatever runs now is run by the host.
	os.Remove(k.marker)
	check := func(after string) {
		t.Helper()
		if got := k.ran(); got != "" {
			t.Fatalf("the host ran the attempt's command during %s:\n%s", after, got)
		}
	}

	changes := sc.ok("get_attempt_changes", map[string]any{"attempt_id": attemptID})
	check("get_attempt_changes")
	if changes.bool("blocked") || len(changes.list("files")) != 3 {
		t.Fatalf("get_attempt_changes = %v", changes)
	}
	patch := sc.ok("get_attempt_patch", map[string]any{"attempt_id": attemptID})
	check("get_attempt_patch")
	if p := patch.str("patch"); !strings.Contains(p, "+More docs.") || !strings.Contains(p, "+notes") {
		t.Fatalf("get_attempt_patch = %v", patch)
	}
	for _, p := range []string{"app/README.md", "app/.gitattributes", "app/NOTES.md"} {
		sc.ok("get_attempt_patch", map[string]any{"attempt_id": attemptID, "paths": []any{p}})
		check("get_attempt_patch(" + p + ")")
	}
	sc.ok("review_queue", map[string]any{"project_id": sc.projectID})
	check("review_queue")

	res := sc.ok("approve_attempt", map[string]any{"attempt_id": attemptID})
	check("approve_attempt")
	if res.str("task_status") != "done" || res.list("repos")[0].str("merged_via") != "worktree" {
		t.Fatalf("approve_attempt = %v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(sc.repo, "README.md")); string(b) != "# app\nMore docs.\n" {
		t.Fatalf("README.md in the user's checkout = %q", b)
	}
}

// TestSecurityGitAttemptCannotReachSourceRepo: an attempt rewrites the git
// configuration, hooks and info files its worktree's git reaches; none of
// it lands in the user's repository, whose next git commands run nothing
// of the agent's, and approval still merges into it.
func TestSecurityGitAttemptCannotReachSourceRepo(t *testing.T) {
	k := newEvilKit(t)
	sc := newScenario(t, unconfined)
	gitDir := filepath.Join(sc.repo, ".git")
	snapshot := func() map[string]string {
		files := map[string]string{}
		for _, sub := range []string{"config", "config.worktree", "hooks", "info"} {
			filepath.WalkDir(filepath.Join(gitDir, sub), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					files[p] = string(b)
				}
				return nil
			})
		}
		return files
	}
	before := snapshot()
	configBefore, err := os.ReadFile(filepath.Join(gitDir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	script := "set -e\n" + k.hookLines(`"$(git rev-parse --git-common-dir)/hooks"`) +
		fmt.Sprintf("git config core.fsmonitor %q\ngit config core.hooksPath %q\ngit config filter.evil.smudge %q\n"+
			"git config filter.evil.clean %q\ngit config core.pager %q\ngit config include.path %q\n",
			k.cmd, k.hooks, k.cmd, k.cmd, k.cmd, filepath.Join(k.dir, "evil.inc")) +
		k.hookLines(fmt.Sprintf("%q", k.hooks)) +
		"printf '* filter=evil\\n' > \"$(git rev-parse --git-common-dir)/info/attributes\"\n" +
		"echo 'More docs.' >> README.md\n" +
		fmt.Sprintf("rm -f %q\n", k.marker)
	_, attemptID := sc.inReview("Reach for the source", script)
	os.Remove(k.marker)

	if after, _ := os.ReadFile(filepath.Join(gitDir, "config")); !bytes.Equal(after, configBefore) {
		t.Fatalf("the attempt rewrote the user's .git/config:\n%s", after)
	}
	if after := snapshot(); !mapsEqual(after, before) {
		t.Fatalf("the attempt changed the user's git dir: %d files before, %d after", len(before), len(after))
	}
	// The user's own next git commands in the repository.
	gitIn(t, sc.repo, "status", "--porcelain")
	gitIn(t, sc.repo, "commit", "-q", "--allow-empty", "-m", "the user's own commit")
	if got := k.ran(); got != "" {
		t.Fatalf("the user's git ran the attempt's command:\n%s", got)
	}

	res := sc.ok("approve_attempt", map[string]any{"attempt_id": attemptID})
	if res.str("task_status") != "done" || res.list("repos")[0].str("merge_commit") != gitIn(t, sc.repo, "rev-parse", "main") {
		t.Fatalf("approve_attempt = %v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(sc.repo, "README.md")); string(b) != "# app\nMore docs.\n" {
		t.Fatalf("README.md in the user's checkout = %q", b)
	}
	gitIn(t, sc.repo, "status", "--porcelain")
	if got := k.ran(); got != "" {
		t.Fatalf("approval or the user's git ran the attempt's command:\n%s", got)
	}
	if after, _ := os.ReadFile(filepath.Join(gitDir, "config")); !bytes.Equal(after, configBefore) {
		t.Fatalf("the user's .git/config changed:\n%s", after)
	}
}

// unconfined runs a scenario's attempts with the OS sandbox off
// (--sandbox off): these tests attack the host's second line — its own
// git dirs, hardened git and link checks — which must hold even when an
// agent can write wherever the host's user can (TestSandboxHoldsAgainstTheAgent
// shows the sandbox refusing the same writes first).
var unconfined = scenarioOptions{serveArgs: []string{"--sandbox", "off"}}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestSecurityGitHardLinkOutsideRefused: an attempt hard-links a file from
// outside its worktree into it; neither get_attempt_file nor
// get_attempt_patch serves its content.
func TestSecurityGitHardLinkOutsideRefused(t *testing.T) {
	const secret = "SECRET-hard-linked-from-outside"
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := newScenario(t, unconfined)
	id := sc.attempt(fmt.Sprintf("ln %q leak.txt\necho fine > fine.txt\n", outside))
	sc.waitSettled(id)
	noSecret := func(what string, res obj) {
		t.Helper()
		if s := fmt.Sprint(res); strings.Contains(s, secret) {
			t.Fatalf("%s served the hard-linked file: %s", what, s)
		}
	}

	file := sc.ok("get_attempt_file", map[string]any{"attempt_id": id, "path": "app/leak.txt"})
	noSecret("get_attempt_file", file)
	if !file.bool("blocked") || file.str("blocked_reason") != "path_outside_workspace" || !strings.Contains(file.str("hint"), "link") {
		t.Fatalf("get_attempt_file(hard link) = %v", file)
	}
	for _, args := range []map[string]any{
		{"attempt_id": id, "paths": []any{"app/leak.txt"}},
		{"attempt_id": id},
		{"attempt_id": id, "force": true},
	} {
		patch := sc.ok("get_attempt_patch", args)
		noSecret("get_attempt_patch", patch)
		if !patch.bool("blocked") || patch.str("blocked_reason") != "path_outside_workspace" || !strings.Contains(patch.str("reason"), "app/leak.txt") {
			t.Fatalf("get_attempt_patch(%v) = %v", args, patch)
		}
	}
	// The rest of the attempt is still served.
	if f := sc.ok("get_attempt_file", map[string]any{"attempt_id": id, "path": "app/fine.txt"}); f.bool("blocked") || f.str("content") != "fine\n" {
		t.Fatalf("get_attempt_file(fine.txt) = %v", f)
	}
	if p := sc.ok("get_attempt_patch", map[string]any{"attempt_id": id, "paths": []any{"app/fine.txt"}}); p.bool("blocked") || !strings.Contains(p.str("patch"), "+fine") {
		t.Fatalf("get_attempt_patch(fine.txt) = %v", p)
	}
}
