package worktree

import (
	"context"
	"fmt"
	"strings"
)

// WIPMessage is the message of the commit CommitWIP makes when task's
// agent is stopped with uncommitted work.
func WIPMessage(task, why string) string {
	return fmt.Sprintf("%s%s [%s]", wipPrefix(task), why, task)
}

func wipPrefix(task string) string { return "wip(" + task + "): " }

// maxWIP bounds how many stacked WIP commits ReopenWIP undoes.
const maxWIP = 50

// ReopenWIP undoes the WIP commits on top of wt's branch that CommitWIP
// made when task's agent was stopped: their changes become uncommitted
// again, as the agent left them, and the old tip is kept under
// refs/chorus/kept/. A WIP commit saves a stopped agent's work; it is not
// the agent's submission. Left on the branch, a later COMPLETE would
// count a scratch file the agent never meant to commit as the task's
// work and land it. Undone, the next iteration sees those files as
// uncommitted, and a COMPLETE is refused until the agent commits what
// belongs to the task. WIP commits the target already contains, and
// anything but a single-parent commit with task's WIP subject, are left
// alone. It returns how many commits it undid.
func (m *Manager) ReopenWIP(ctx context.Context, wt Worktree, task string) (int, error) {
	if task == "" || wt.Dir == "" {
		return 0, nil
	}
	out, err := m.git(ctx, wt.Dir, "log", "-n", fmt.Sprint(maxWIP+1), "--format=%H%x09%P%x09%s", "HEAD")
	if err != nil {
		return 0, err
	}
	var tip, base string
	n := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || n == maxWIP {
			break
		}
		if tip == "" {
			tip = f[0]
		}
		parents := strings.Fields(f[1])
		if len(parents) != 1 || !strings.HasPrefix(f[2], wipPrefix(task)) {
			break
		}
		if code, err := m.gitCode(ctx, wt.Dir, "merge-base", "--is-ancestor", f[0], m.Target); err != nil || code == 0 {
			break // landed (or unknown): history, not leftovers
		}
		n, base = n+1, parents[0]
	}
	if n == 0 {
		return 0, nil
	}
	if _, _, err := KeepRewound(ctx, m.RepoDir, task, tip, base); err != nil {
		return 0, fmt.Errorf("keeping %s before undoing its WIP commits: %w", tip, err)
	}
	// --mixed: the index and the commits go, every file stays as it is.
	if _, err := m.git(ctx, wt.Dir, "reset", "-q", "--mixed", base); err != nil {
		return 0, err
	}
	return n, nil
}
