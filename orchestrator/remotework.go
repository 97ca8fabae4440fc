package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/worktree"
)

// Agents whose hosts cannot see this machine's files (a runner that is a
// host.Remote: pods) work in a clone of runner.remote (else merge.remote). The hub keeps each
// task's worktree and branch as for a local agent and meets the pod on
// the remote: before a start it puts the branch there (or follows work a
// pod pushed that it had not heard of); the host pushes the branch at
// COMPLETE and when the agent ends, its uncommitted work under
// host.WIPRef; the hub fetches the branch into the task's worktree when
// it hears either, so checks and the merge queue see the agent's work as
// if it had been made here. The agent's signals come over the host's
// stream (deliverRelayed).

// remoteURL is the URL hosts clone from, or "" when they share this
// machine's files.
func (e *Engine) remoteURL(rn host.Runner) string {
	if rm, ok := rn.(host.Remote); ok {
		return rm.RemoteURL()
	}
	return ""
}

// podRemote is the git remote the hub meets its pods at.
func (e *Engine) podRemote() string { return e.cfg.Runner.PodRemote(e.cfg.Merge.Remote) }

// gitIdentity is the commit identity the repository has, for the clones.
func (e *Engine) gitIdentity(ctx context.Context) (name, email string) {
	name, _ = gitx.Git(ctx, e.opt.Dir.Root, "config", "user.name")
	email, _ = gitx.Git(ctx, e.opt.Dir.Root, "config", "user.email")
	return name, email
}

// shareTaskBranch puts the task's branch on the remote for a host to
// clone. Work a host pushed that the hub had not heard of (its engine
// was away) is followed first; a branch the hub moved elsewhere (a
// rewind) replaces the remote's, whose tip is kept under refs/chorus/kept
// first.
func (e *Engine) shareTaskBranch(ctx context.Context, taskID string, wt worktree.Worktree) error {
	remote := e.podRemote()
	ref := "refs/heads/" + wt.Branch
	fetched := ""
	if _, err := gitx.Git(ctx, wt.Dir, "fetch", "-q", "--no-tags", remote, ref); err == nil {
		fetched, _ = gitx.Git(ctx, wt.Dir, "rev-parse", "FETCH_HEAD")
	}
	head, err := gitx.Git(ctx, wt.Dir, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	force := ""
	switch {
	case fetched == head:
		return nil
	case fetched != "" && isAncestor(ctx, wt.Dir, head, fetched):
		_, err := gitx.Git(ctx, wt.Dir, "reset", "-q", "--hard", fetched)
		return err
	case fetched != "" && !isAncestor(ctx, wt.Dir, fetched, head):
		if _, err := worktree.KeepCommit(ctx, e.opt.Dir.Root, taskID, worktree.KeptRewound, fetched); err != nil {
			return fmt.Errorf("keeping the remote's tip of %s: %w", wt.Branch, err)
		}
		force = "+"
	}
	if _, err := gitx.Git(ctx, wt.Dir, "push", "-q", "--no-verify", remote, force+"HEAD:"+ref); err != nil {
		return fmt.Errorf("putting %s on %s for the agent's pod: %w", wt.Branch, remote, err)
	}
	return nil
}

// followTaskBranch brings what the host pushed into the task's worktree.
// A branch its agent rewrote is followed too, the hub's old tip kept.
func (e *Engine) followTaskBranch(ctx context.Context, taskID string, wt worktree.Worktree) error {
	if _, err := gitx.Git(ctx, wt.Dir, "fetch", "-q", "--no-tags", e.podRemote(), "refs/heads/"+wt.Branch); err != nil {
		return fmt.Errorf("fetching %s from %s: %w", wt.Branch, e.podRemote(), err)
	}
	fetched, err := gitx.Git(ctx, wt.Dir, "rev-parse", "FETCH_HEAD")
	if err != nil {
		return err
	}
	head, err := gitx.Git(ctx, wt.Dir, "rev-parse", "HEAD")
	if err != nil || head == fetched {
		return err
	}
	if !isAncestor(ctx, wt.Dir, head, fetched) {
		if _, err := worktree.KeepCommit(ctx, e.opt.Dir.Root, taskID, worktree.KeptRewound, head); err != nil {
			return err
		}
	}
	_, err = gitx.Git(ctx, wt.Dir, "reset", "-q", "--hard", fetched)
	return err
}

func isAncestor(ctx context.Context, dir, a, b string) bool {
	_, err := gitx.Git(ctx, dir, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// remoteGit is the Spec.Git of a task's host, after its branch was put
// on the remote.
func (r *agentRun) remoteGit(ctx context.Context, url string, wt worktree.Worktree, env []string) (*host.Git, error) {
	if err := r.e.shareTaskBranch(ctx, r.taskID, wt); err != nil {
		return nil, err
	}
	name, email := r.e.gitIdentity(ctx)
	return &host.Git{URL: url, Branch: wt.Branch, HubDir: wt.Dir, Name: name, Email: email,
		TrustClaude: r.trustsClaude(env)}, nil
}

// relay has the engine take the envelopes hp's host relays for r (over
// each connection hp makes), and follow the branch the host pushed when
// the agent ends, before the supervisor judges the exit.
func (r *agentRun) relay(hp *hostedProc, wt worktree.Worktree) {
	hp.onClient = func(cl *host.Client) {
		cl.OnSignal(func(env signal.Envelope) error { return r.e.deliverRelayed(r, wt, env) })
	}
	hp.onClient(hp.cur())
	hp.follow = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := r.e.followTaskBranch(ctx, r.taskID, wt); err != nil {
			r.e.emit(Event{Kind: EvError, Agent: r.id, Task: r.taskID, Text: "following the agent's pushed work: " + err.Error()})
		}
	}
}

// deliverRelayed judges an envelope r's host relayed: the host vouched
// that its agent sent it. A COMPLETE's work was pushed before it came:
// the task's worktree follows it first, so the checks see it.
func (e *Engine) deliverRelayed(r *agentRun, wt worktree.Worktree, env signal.Envelope) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if env.Signal.Type == signal.Complete {
		if err := e.followTaskBranch(ctx, r.taskID, wt); err != nil {
			return fmt.Errorf("the hub could not fetch the pushed work: %s", strings.TrimSpace(err.Error()))
		}
	}
	var refusal error
	err := e.do(ctx, func() {
		if e.runs[r.id] != r {
			refusal = errors.New("the agent's run has ended")
			return
		}
		refusal = e.deliverTo(r, env, signal.Peer{})
	})
	if err != nil {
		return err
	}
	return refusal
}

// dropLandedBranch removes a landed task's branch and WIP ref from the
// pod remote, off the loop and best effort: the work is in the target,
// and the remote would otherwise gather every task ever run. A task that
// did not land keeps its remote copy (it is the work).
func (e *Engine) dropLandedBranch(taskID string) {
	if e.remoteURL(e.runner()) == "" {
		return
	}
	branch := ""
	for _, it := range e.merge.Snapshot().Items {
		if it.TaskID == taskID {
			branch = it.Branch
		}
	}
	if branch == "" {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.dropRemoteBranch(ctx, taskID, branch); err != nil {
			select {
			case e.msgs <- func() {
				e.emit(Event{Kind: EvAlert, Task: taskID, Text: "removing the landed " + branch + " from " + e.podRemote() + ": " + err.Error() + "; it stays there, harmless"})
			}:
			case <-e.loopDone:
			}
		}
	}()
}

// dropRemoteBranch deletes branch and its WIP ref on the pod remote in one
// push, each only if it still holds what was seen. A tip the target lacks
// and any uncommitted work are kept under refs/chorus/kept first.
func (e *Engine) dropRemoteBranch(ctx context.Context, taskID, branch string) error {
	remote, root := e.podRemote(), e.opt.Dir.Root
	ref, wip := "refs/heads/"+branch, host.WIPRef(branch)
	out, err := gitx.Git(ctx, root, "ls-remote", remote, ref, wip)
	if err != nil {
		return err
	}
	args := []string{"push", "-q", "--no-verify", remote}
	var dels []string
	for _, l := range strings.Split(out, "\n") {
		sha, name, ok := strings.Cut(l, "\t")
		if !ok || (name != ref && name != wip) {
			continue
		}
		if _, err := gitx.Git(ctx, root, "fetch", "-q", "--no-tags", remote, name); err != nil {
			return err
		}
		kind := worktree.KeptWIP
		if name == ref {
			kind = worktree.KeptTip
		}
		if kind == worktree.KeptWIP || !isAncestor(ctx, root, sha, e.opt.Target) {
			if _, err := worktree.KeepCommit(ctx, root, taskID, kind, sha); err != nil {
				return err
			}
		}
		args = append(args, "--force-with-lease="+name+":"+sha)
		dels = append(dels, ":"+name)
	}
	if len(dels) == 0 {
		return nil
	}
	_, err = gitx.Git(ctx, root, append(args, dels...)...)
	return err
}
