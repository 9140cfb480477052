package board

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/host/internal/workspace"
)

// Blocked reasons (of tasks.ChangesBlockedReason, PatchBlockedReason and
// FileBlockedReason).
const (
	BlockedSummaryFailed     = tasks.ReasonSummaryFailed
	BlockedThresholdExceeded = tasks.ReasonThresholdExceeded
	BlockedTooManyPaths      = tasks.ReasonTooManyPaths
	BlockedSizeExceeded      = tasks.ReasonSizeExceeded
	BlockedOutsideWorkspace  = tasks.ReasonPathOutsideWorkspace
)

// ChangesArgs are get_attempt_changes' arguments.
type ChangesArgs = tasks.ChangesIn

// ChangedFile is one changed file, its path prefixed by its repo's name.
type ChangedFile = tasks.ChangedFile

// ChangesResult answers get_attempt_changes (without code, which the tool
// adds).
type ChangesResult = tasks.ChangesOut

// attemptChanges measures every repo of an attempt against its base. A repo
// whose changes alone exceed limit is not read: the error wraps its
// *gitops.GuardExceeded (gitops.Off measures everything).
func (b *Board) attemptChanges(ctx context.Context, at store.Attempt, limit gitops.Guard) ([]ChangedFile, []store.AttemptRepo, error) {
	repos, err := b.store.AttemptRepos(ctx, at.ID)
	if err != nil {
		return nil, nil, err
	}
	files := []ChangedFile{}
	for _, r := range repos {
		c, _ := b.clone(ctx, at.ID, r) // the repository is needed only to rebuild a lost host git dir
		changes, _, err := gitops.ChangesWithin(ctx, c, r.BaseCommit, limit)
		if err != nil {
			return nil, repos, fmt.Errorf("repo %s: %w", r.RepoName, err)
		}
		for _, c := range changes {
			f := ChangedFile{Path: r.RepoName + "/" + c.Path, Status: tasks.FileStatus(c.Status), Added: c.Added, Deleted: c.Deleted,
				Binary: c.Binary, Bytes: c.Bytes}
			if c.OldPath != "" {
				f.OldPath = r.RepoName + "/" + c.OldPath
			}
			files = append(files, f)
		}
	}
	return files, repos, nil
}

// attemptOutside finds the files of an attempt's folder that are in none
// of its repos.
func (b *Board) attemptOutside(ctx context.Context, attemptID string) (OutsideFiles, error) {
	repos, err := b.store.AttemptRepos(ctx, attemptID)
	if err != nil {
		return OutsideFiles{}, err
	}
	return b.outsideFiles(ctx, attemptID, repos)
}

// notRead ends the reason of a guard that blocked before git read the
// files: the summary holds what certainly changed, without lines.
const notRead = "; measured without reading the files (lines not counted)"

// guardExceeded returns the *gitops.GuardExceeded err wraps, or nil.
func guardExceeded(err error) *gitops.GuardExceeded {
	var over *gitops.GuardExceeded
	if errors.As(err, &over) {
		return over
	}
	return nil
}

func summarize(files []ChangedFile) gitops.Summary {
	s := gitops.Summary{FileCount: len(files)}
	for _, f := range files {
		s.Added += f.Added
		s.Deleted += f.Deleted
		s.TotalBytes += f.Bytes
	}
	return s
}

// GetAttemptChanges returns the attempt's diff summary against its base
// commits (untracked files included) and, unless the guard blocks and
// force is false, the changed-file list.
func (b *Board) GetAttemptChanges(ctx context.Context, a ChangesArgs) (ChangesResult, error) {
	at, err := b.attempt(ctx, a.AttemptID)
	if err != nil {
		return ChangesResult{}, err
	}
	if host := b.remoteHost(ctx, at); host != "" {
		var out ChangesResult
		return out, b.forward(ctx, host, opChanges, a, &out)
	}
	out := ChangesResult{AttemptID: at.ID, Guard: guardOf(b.guard), Files: []ChangedFile{}}
	// What is outside the repos is reported whatever the guard says of
	// what is inside: it is never merged, so it must never go unseen.
	if out.Outside, err = b.attemptOutside(ctx, at.ID); err != nil {
		return ChangesResult{}, err
	}
	limit := b.guard
	if a.Force {
		limit = gitops.Off
	}
	files, _, err := b.attemptChanges(ctx, at, limit)
	if over := guardExceeded(err); over != nil {
		out.Summary = summaryOf(over.Summary)
		out.Blocked, out.BlockedReason, out.Reason = true, ptr[tasks.ChangesBlockedReason](BlockedThresholdExceeded), over.Reason+notRead
		out.Hint = "call get_attempt_changes again with force=true to list the files, or get_attempt_patch with a few paths"
		return out, nil
	}
	if err != nil {
		out.Blocked, out.BlockedReason, out.Reason = true, ptr[tasks.ChangesBlockedReason](BlockedSummaryFailed), err.Error()
		out.Hint = "the worktree could not be measured; check get_attempt_status and tail_attempt_logs, then retry"
		return out, nil
	}
	sum := summarize(files)
	out.Summary = summaryOf(sum)
	if over, why := b.guard.Check(sum); over && !a.Force {
		out.Blocked, out.BlockedReason, out.Reason = true, ptr[tasks.ChangesBlockedReason](BlockedThresholdExceeded), why
		out.Hint = "call get_attempt_changes again with force=true to list the files, or get_attempt_patch with a few paths"
		return out, nil
	}
	out.Files = files
	return out, nil
}

// Patch limits.
const (
	DefaultPatchBytes = 204800
	MaxPatchBytes     = 1 << 20
	MaxPatchPaths     = 100
)

// PatchArgs are get_attempt_patch's arguments.
type PatchArgs = tasks.PatchIn

// PatchResult answers get_attempt_patch (without code, which the tool
// adds).
type PatchResult = tasks.PatchOut

// GetAttemptPatch returns a unified diff against the base commits for the
// given repo-prefixed paths (all changes when none), cut at max_bytes.
// Without paths or force, the diff guard applies as in get_attempt_changes.
func (b *Board) GetAttemptPatch(ctx context.Context, a PatchArgs) (PatchResult, error) {
	at, err := b.attempt(ctx, a.AttemptID)
	if err != nil {
		return PatchResult{}, err
	}
	if host := b.remoteHost(ctx, at); host != "" {
		var out PatchResult
		return out, b.forward(ctx, host, opPatch, a, &out)
	}
	out := PatchResult{AttemptID: at.ID, Paths: a.Paths}
	if out.Paths == nil {
		out.Paths = []string{}
	}
	block := func(reason tasks.PatchBlockedReason, why, hint string) (PatchResult, error) {
		out.Blocked, out.BlockedReason, out.Reason, out.Hint = true, &reason, why, hint
		return out, nil
	}
	max := a.MaxBytes
	switch {
	case max < 0:
		return PatchResult{}, invalid("max_bytes", "max_bytes must be positive", "omit max_bytes for the default 204800")
	case max == 0:
		max = DefaultPatchBytes
	case max > MaxPatchBytes:
		return block(BlockedSizeExceeded, fmt.Sprintf("max_bytes %d is over the cap %d", max, MaxPatchBytes),
			fmt.Sprintf("pass max_bytes ≤ %d and fewer paths", MaxPatchBytes))
	}
	if len(a.Paths) > MaxPatchPaths {
		return block(BlockedTooManyPaths, fmt.Sprintf("%d paths, over the limit of %d", len(a.Paths), MaxPatchPaths),
			fmt.Sprintf("pass at most %d paths per call", MaxPatchPaths))
	}
	repos, err := b.store.AttemptRepos(ctx, at.ID)
	if err != nil {
		return PatchResult{}, err
	}
	byRepo := map[string][]string{}
	for i, p := range a.Paths {
		repo, rel, err := workspace.SplitPath(p)
		if err != nil || rel == "." {
			return block(BlockedOutsideWorkspace, fmt.Sprintf("paths[%d] %q is not a repo-prefixed path inside the attempt", i, p),
				"pass paths exactly as get_attempt_changes lists them (repo_name/path)")
		}
		if !slices.ContainsFunc(repos, func(r store.AttemptRepo) bool { return r.RepoName == repo }) {
			return PatchResult{}, invalid(fmt.Sprintf("paths[%d]", i), fmt.Sprintf("no repo %q in this attempt", repo),
				"pass paths exactly as get_attempt_changes lists them (repo_name/path)").WithDetail("repos", repoNames(repos))
		}
		byRepo[repo] = append(byRepo[repo], path.Clean(rel))
	}
	if len(a.Paths) == 0 && !a.Force {
		files, _, err := b.attemptChanges(ctx, at, b.guard)
		if over := guardExceeded(err); over != nil {
			return block(BlockedThresholdExceeded, over.Reason+notRead,
				"pass a few paths from get_attempt_changes(force=true), or force=true with a max_bytes")
		}
		if err != nil {
			return block(BlockedSummaryFailed, err.Error(), "check get_attempt_status, then retry")
		}
		if over, why := b.guard.Check(summarize(files)); over {
			return block(BlockedThresholdExceeded, why,
				"pass a few paths from get_attempt_changes(force=true), or force=true with a max_bytes")
		}
	}
	var patch strings.Builder
	for _, r := range repos {
		paths, chosen := byRepo[r.RepoName]
		if len(a.Paths) > 0 && !chosen {
			continue
		}
		c, _ := b.clone(ctx, at.ID, r)
		diff, err := gitops.Patch(ctx, c, r.BaseCommit, paths)
		var linked *gitops.LinkedFilesError
		if errors.As(err, &linked) {
			return block(BlockedOutsideWorkspace, linkedMessage(r.RepoName, linked), linkedHint)
		}
		if err != nil {
			return block(BlockedSummaryFailed, fmt.Sprintf("repo %s: %v", r.RepoName, err), "check get_attempt_status, then retry")
		}
		patch.WriteString(prefixPatch(string(diff), r.RepoName))
	}
	text := patch.String()
	out.TotalBytes = len(text)
	if len(text) > max {
		cut := max
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		text, out.Truncated = text[:cut], true
		out.Hint = "the patch was cut at max_bytes; pass fewer paths or a larger max_bytes"
	}
	out.Patch, out.Bytes = text, len(text)
	return out, nil
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// linkedHint is what to do about files whose content is not the attempt's
// own (gitops.LinkedFilesError).
const linkedHint = "hard-linked files and files on another file system are not served: their content may be any file's; " +
	"pass paths without them to get_attempt_patch, or have the agent replace each with a copy (cp --remove-destination)"

func linkedMessage(repo string, e *gitops.LinkedFilesError) string {
	paths := make([]string, len(e.Paths))
	for i, p := range e.Paths {
		paths[i] = repo + "/" + p
	}
	return fmt.Sprintf("%s: hard link or on another file system, so the content may lie outside the attempt", strings.Join(paths, ", "))
}

func repoNames(repos []store.AttemptRepo) []string {
	names := make([]string, len(repos))
	for i, r := range repos {
		names[i] = r.RepoName
	}
	return names
}

// prefixPatch rewrites the a/ and b/ paths of a git diff so they carry the
// repo name, matching the paths agents see everywhere else.
func prefixPatch(diff, repo string) string {
	if diff == "" {
		return ""
	}
	lines := strings.SplitAfter(diff, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "diff --git a/"):
			l = strings.Replace(l, " a/", " a/"+repo+"/", 1)
			lines[i] = strings.Replace(l, " b/", " b/"+repo+"/", 1)
		case strings.HasPrefix(l, "--- a/"):
			lines[i] = "--- a/" + repo + "/" + l[len("--- a/"):]
		case strings.HasPrefix(l, "+++ b/"):
			lines[i] = "+++ b/" + repo + "/" + l[len("+++ b/"):]
		case strings.HasPrefix(l, "rename from "), strings.HasPrefix(l, "rename to "), strings.HasPrefix(l, "copy from "), strings.HasPrefix(l, "copy to "):
			sp := strings.Index(l[7:], " ") + 7
			lines[i] = l[:sp+1] + repo + "/" + l[sp+1:]
		}
	}
	return strings.Join(lines, "")
}

// FileArgs are get_attempt_file's arguments.
type FileArgs = tasks.FileIn

// FileResult answers get_attempt_file: the slice read, fields that do not
// apply empty rather than null (the tool makes them null).
type FileResult = tasks.BoardFile

// GetAttemptFile reads a bounded slice of a file in the attempt's
// worktrees through os.Root: repo-prefixed path, start offset, max_bytes
// (default 65536, cap 524288).
func (b *Board) GetAttemptFile(ctx context.Context, a FileArgs) (FileResult, error) {
	at, err := b.attempt(ctx, a.AttemptID)
	if err != nil {
		return FileResult{}, err
	}
	if host := b.remoteHost(ctx, at); host != "" {
		var out FileResult
		return out, b.forward(ctx, host, opFile, a, &out)
	}
	if a.Path == "" {
		return FileResult{}, abi.NewEnvelope(abi.CodeMissingRequired, "path is required",
			"pass a repo-prefixed path from get_attempt_changes").WithDetail("field", "path")
	}
	repos, err := b.store.AttemptRepos(ctx, at.ID)
	if err != nil {
		return FileResult{}, err
	}
	roots := make([]workspace.Repo, len(repos))
	for i, r := range repos {
		roots[i] = workspace.Repo{Name: r.RepoName, Dir: r.WorktreeDir}
	}
	ws, err := workspace.Open(roots)
	if err != nil {
		return FileResult{}, abi.NewEnvelope(abi.CodeConflict, "the attempt's worktrees cannot be opened: "+err.Error(),
			"the attempt's task may have been deleted; call list_task_attempts")
	}
	defer ws.Close()
	slice, err := ws.ReadFile(a.Path, a.Start, a.MaxBytes)
	if err != nil {
		return FileResult{}, err
	}
	return FileResult{AttemptID: at.ID, Path: slice.Path, Start: slice.Start, Size: slice.Size, Content: slice.Content,
		Encoding: tasks.Encoding(slice.Encoding), Truncated: slice.Truncated, Blocked: slice.Blocked,
		BlockedReason: tasks.FileBlockedReason(slice.BlockedReason), Hint: slice.Hint, NextStart: slice.NextStart}, nil
}
