package merge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/worktree"
)

// The scratchpad's learnings, committed on the task branch before it merges.

// Compiled on first use: package init runs on every CLI start.
var learningsRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?ms)^## Learnings[^\n]*\n(.*?)(?:^## |\z)`) })

// LearningsSection returns the body of the scratchpad's "## Learnings"
// section, trimmed ("" when there is none).
func LearningsSection(scratchpad string) string {
	m := learningsRE().FindStringSubmatch(scratchpad)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(m[1])
}

// FormatLearnings lays a scratchpad's learnings out as the learnings file
// has them: each learning (a "- " or "* " line, with the lines under it)
// followed by its attribution, "  Source: <task> (<date>, <agent>)".
// Other lines (a topic heading) are kept as they are.
func FormatLearnings(body, task, agent string, now time.Time) string {
	src := fmt.Sprintf("  Source: %s (%s, %s)", task, now.Format("2006-01-02"), agent)
	var out []string
	open, attributed := false, false
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		t := strings.TrimSpace(l)
		bullet := strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ")
		if open && (bullet || t == "" || strings.HasPrefix(t, "#")) {
			out = append(out, src)
			open, attributed = false, true
		}
		switch {
		case bullet:
			out = append(out, "- "+strings.TrimSpace(t[2:]))
			open = true
		case open:
			out = append(out, "  "+t) // a continuation of the learning
		default:
			out = append(out, l)
		}
	}
	if open || !attributed {
		out = append(out, src) // the last learning, or prose with no list
	}
	return strings.Join(out, "\n")
}

// extractLearnings appends the scratchpad's learnings to the shared
// learnings file as a commit on the task branch, in the task's worktree, so
// they land with the task; never in the user's checkout. Returns the
// (possibly new) branch tip.
func (in *integrator) extractLearnings(ctx context.Context, it Item, head string) (string, error) {
	pad, err := os.ReadFile(filepath.Join(it.Worktree, worktree.ScratchpadPath))
	if err != nil {
		return head, nil
	}
	body := LearningsSection(string(pad))
	if body == "" {
		return head, nil
	}
	agent := it.Agent
	if agent == "" {
		agent = "agent"
	}
	source := fmt.Sprintf("Source: %s (", it.TaskID)
	p := filepath.Join(it.Worktree, LearningsPath)
	cur, _ := os.ReadFile(p)
	committed, _ := git(ctx, it.Worktree, "show", "HEAD:"+LearningsPath)
	if strings.Contains(committed, source) || strings.Contains(committed, fmt.Sprintf("## %s (%s)", it.TaskID, agent)) {
		return head, nil // extracted already (the second form is older Chorus's)
	}
	if ref, err := git(ctx, it.Worktree, "symbolic-ref", "-q", "HEAD"); err != nil || ref != "refs/heads/"+it.Branch {
		return head, nil // the worktree is not on the task branch: leave it alone
	}
	if h, err := git(ctx, it.Worktree, "rev-parse", "HEAD"); err != nil || h != head {
		return head, nil
	}
	// Written but not committed (Chorus stopped in between): the
	// learnings are in the file already, and go in once.
	if !strings.Contains(string(cur), source) {
		text := string(cur)
		if text == "" {
			text = committed
			if text != "" {
				text += "\n"
			}
		}
		if text == "" {
			text = "# Learnings\n"
		}
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "\n" + FormatLearnings(body, it.TaskID, agent, in.q.opt.Now()) + "\n"
		if err := replaceInWorktree(it.Worktree, p, []byte(text)); err != nil {
			return head, err
		}
	}
	if _, err := git(ctx, it.Worktree, "add", "--", LearningsPath); err != nil {
		return head, err
	}
	if _, err := git(ctx, it.Worktree, "commit", "-q", "--no-verify", "-m",
		fmt.Sprintf("learn: extract from %s (%s)", it.TaskID, agent), "--", LearningsPath); err != nil {
		return head, err
	}
	return git(ctx, it.Worktree, "rev-parse", "HEAD")
}

// replaceInWorktree replaces the file p of worktree wt with data, whole
// or not at all: written under a temporary name in the worktree's private
// git dir, where a stop leaves nothing a commit of the worktree would
// take, then renamed into place (written in place when that dir is on
// another file system).
func replaceInWorktree(wt, p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	admin, ok := gitx.WorktreeAdminDir(wt)
	if !ok {
		return os.WriteFile(p, data, 0o644)
	}
	tmp := filepath.Join(admin, "chorus-"+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	err := os.Rename(tmp, p)
	if errors.Is(err, syscall.EXDEV) {
		os.Remove(tmp)
		return os.WriteFile(p, data, 0o644)
	}
	return err
}
