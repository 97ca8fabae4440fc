package merge

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/proc"
)

// The quality gate on a candidate: the project's commands run on it, lock
// files regenerated when the branch touched one.

// afterCandidate tests the candidate, waits for approval if configured,
// then lands it.
func (in *integrator) afterCandidate(ctx context.Context, id string) {
	it, _ := in.q.get(id)
	if !it.Tested && len(in.q.required) == 0 && in.q.opt.Merge.LockfileCommand == "" {
		it.Tested = true // nothing to run (a candidate from before a config change)
	}
	if !it.Tested {
		in.q.mark(id, StatusTesting)
		if err := in.q.checkoutInteg(ctx, it.Candidate); err != nil {
			in.q.attemptFailed(ctx, id, err.Error())
			return
		}
		if in.q.opt.Merge.LockfileCommand != "" {
			if err := in.regenerateLockfiles(ctx, id); err != nil {
				in.q.attemptFailed(ctx, id, err.Error())
				return
			}
			it, _ = in.q.get(id)
		}
		if name, out, err := in.quality(ctx, in.integ, it.TaskID, it.Candidate); err != nil {
			if ctx.Err() != nil {
				in.q.move(id, StatusPending, nil)
				return
			}
			in.q.res.qualityFailed(ctx, id, name, out)
			return
		}
		if !in.q.step(id, func(it *Item, _ *Stats) { it.Tested = true }) {
			return
		}
	}
	in.q.phase(PhaseTesting)
	if in.q.opt.Merge.RequireApproval && !it.Approved {
		in.q.move(id, StatusWaitingApproval, func(it *Item, _ *Stats) {
			it.Action = "review it (chorus task diff " + id + ", or v in the merge view) and approve it to land (chorus merge approve " + id + ", or m there)"
		})
		in.q.emit(Event{Kind: EventWaitingApproval, TaskID: id, Commit: it.Candidate})
		return
	}
	in.land(ctx, id)
}

// quality runs the required commands in dir; the error names the first
// that failed, with its output.
func (in *integrator) quality(ctx context.Context, dir, task, commit string) (string, string, error) {
	env := []string{"CHORUS_TASK_ID=" + task, "CHORUS_MERGE_CANDIDATE=" + commit}
	for _, q := range in.q.required {
		r, err := proc.Shell(ctx, q.Command, dir, env, q.Timeout())
		if err != nil || r.ExitCode != 0 {
			out := tail(string(r.Stdout)+string(r.Stderr), 4000)
			if err != nil {
				out = err.Error() + "\n" + out
			}
			name := q.Name
			if name == "" {
				name = q.Command
			}
			return name, out, fmt.Errorf("%s failed", name)
		}
	}
	return "", "", nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// regenerateLockfiles reruns the configured lock file command on the
// checked-out candidate when the branch touched a lock file (the lock
// driver kept one side), and amends the candidate with the result.
func (in *integrator) regenerateLockfiles(ctx context.Context, id string) error {
	it, _ := in.q.get(id)
	args := append([]string{"diff", "--name-only", it.Base + "..." + it.Head, "--"}, lockPathspecs()...)
	out, err := git(ctx, in.q.opt.RepoDir, args...)
	if err != nil || strings.TrimSpace(out) == "" {
		return err
	}
	r, err := proc.Shell(ctx, in.q.opt.Merge.LockfileCommand, in.integ, nil, gitTimeout)
	if err != nil || r.ExitCode != 0 {
		return fmt.Errorf("lock file command failed: %s", tail(string(r.Stderr)+string(r.Stdout), 2000))
	}
	files := strings.Fields(out)
	if _, err := git(ctx, in.integ, append([]string{"add", "-A", "--"}, files...)...); err != nil {
		return err
	}
	tree, err := git(ctx, in.integ, "write-tree")
	if err != nil {
		return err
	}
	cur, err := git(ctx, in.q.opt.RepoDir, "rev-parse", it.Candidate+"^{tree}")
	if err != nil || cur == tree {
		return err
	}
	msg, err := git(ctx, in.q.opt.RepoDir, "log", "-1", "--format=%B", it.Candidate)
	if err != nil {
		return err
	}
	c, err := git(ctx, in.q.opt.RepoDir, "commit-tree", tree, "-p", it.Base, "-p", it.Head, "-m", msg)
	if err != nil {
		return err
	}
	if _, err := git(ctx, in.q.opt.RepoDir, "update-ref", candidateRef(id), c); err != nil {
		return err
	}
	if err := in.q.checkoutInteg(ctx, c); err != nil {
		return err
	}
	in.q.step(id, func(it *Item, _ *Stats) { it.Candidate = c })
	return nil
}

func lockPathspecs() []string {
	var p []string
	for _, l := range LockFiles {
		p = append(p, ":(glob)**/"+l)
	}
	return p
}
