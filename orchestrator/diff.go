package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/taskid"
)

// TaskDiff is what a task changed, as git diff text (a --stat summary when
// stat is set), and where it was taken from.
type TaskDiff struct {
	TaskID string `json:"taskId"`
	// From, To are the commits compared; Source says what they are.
	From   string `json:"from"`
	To     string `json:"to"`
	Source string `json:"source"`
	Text   string `json:"text"`
}

// DiffTask returns a task's change. While its branch (agent/<profile>/ID)
// holds work the target lacks, that is the branch against its merge base
// with the target; once landed, it is the merge commit against its first
// parent. The merge commit is found in items (the live queue), the merge
// history, or else by its Chorus-Task trailer on the target.
func DiffTask(ctx context.Context, dir chorusdir.Dir, target, id string, items []merge.Item, stat bool) (TaskDiff, error) {
	if err := taskid.Check(id); err != nil {
		return TaskDiff{}, err
	}
	root := dir.Root
	d := TaskDiff{TaskID: id}
	args := []string{"-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff"}
	if stat {
		args = append(args, "--stat")
	}
	branch, err := taskBranch(ctx, root, id)
	if err != nil {
		return d, err
	}
	if branch != "" {
		// Work not (all) on the target yet: the branch against where it
		// left the target.
		if _, err := gitx.Git(ctx, root, "merge-base", "--is-ancestor", branch, target); err != nil {
			base, err := gitx.Git(ctx, root, "merge-base", target, branch)
			if err != nil {
				return d, fmt.Errorf("finding where %s left %s: %w", branch, target, err)
			}
			tip, err := gitx.Git(ctx, root, "rev-parse", branch)
			if err != nil {
				return d, err
			}
			d.From, d.To, d.Source = base, tip, "branch "+branch+" against its merge base with "+target
			d.Text, err = gitx.Git(ctx, root, append(args, base, tip)...)
			return d, err
		}
	}
	landed := ""
	for _, it := range items {
		if it.TaskID == id && it.Status == merge.StatusLanded && it.MergeCommit != "" {
			landed = it.MergeCommit
		}
	}
	if landed == "" {
		h := &mergeHistory{path: filepath.Join(dir.Path, "merge-history.jsonl"), done: map[string]string{}}
		hist, err := h.load()
		if err != nil {
			return d, err
		}
		for _, it := range hist {
			if it.TaskID == id && it.MergeCommit != "" {
				landed = it.MergeCommit
			}
		}
	}
	if landed == "" {
		landed, err = trailerCommit(ctx, root, target, id)
		if err != nil {
			return d, err
		}
	}
	if landed == "" {
		if branch != "" {
			return d, fmt.Errorf("task %s: its branch %s adds nothing to %s", id, branch, target)
		}
		return d, fmt.Errorf("task %s has no branch (agent/*/%s) and no merge on %s; has an agent worked on it?", id, id, target)
	}
	d.From, d.To, d.Source = landed+"^1", landed, "merge commit "+landed[:min(12, len(landed))]+" on "+target
	d.Text, err = gitx.Git(ctx, root, append(args, landed+"^1", landed)...)
	return d, err
}

// taskBranch is the agent branch of task id, "" when there is none. With
// several (different agents over time), the one committed to last.
func taskBranch(ctx context.Context, root, id string) (string, error) {
	out, err := gitx.Git(ctx, root, "for-each-ref", "--sort=-committerdate", "--format=%(refname:short)", "refs/heads/agent/")
	if err != nil {
		return "", err
	}
	for _, b := range strings.Split(out, "\n") {
		if parts := strings.Split(b, "/"); len(parts) == 3 && parts[0] == "agent" && parts[2] == id {
			return b, nil
		}
	}
	return "", nil
}

// trailerCommit is the newest commit on target whose Chorus-Task trailer
// is id.
func trailerCommit(ctx context.Context, root, target, id string) (string, error) {
	out, err := gitx.Git(ctx, root, "log", "--fixed-strings", "--grep=Chorus-Task: "+id,
		"--format=%H%x1f%(trailers:key=Chorus-Task,valueonly,separator=%x20)", target)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		h, tr, ok := strings.Cut(l, "\x1f")
		if ok && strings.TrimSpace(tr) == id {
			return h, nil
		}
	}
	return "", nil
}

// TaskDiff is DiffTask for front ends: it knows the target and the live
// merge queue. It runs git, so call it off a UI thread.
func (e *Engine) TaskDiff(ctx context.Context, id string, stat bool) (TaskDiff, error) {
	if id == "" {
		return TaskDiff{}, errors.New("no task selected")
	}
	var items []merge.Item
	if e.merge != nil {
		items = e.merge.Snapshot().Items
	}
	return DiffTask(ctx, e.opt.Dir, e.opt.Target, id, items, stat)
}
