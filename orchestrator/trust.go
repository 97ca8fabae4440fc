package orchestrator

import (
	"path/filepath"

	"github.com/chorus-dev/chorus/agent/claudetrust"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/worktree"
)

// Claude Code's folder trust, checked once per profile and run: an
// interactive Claude started in a worktree Claude Code does not trust
// stops at its trust dialog. The trust the user gave the repository is
// carried to its worktrees (trustWorktree); without it, the run says so
// once and autopilot starts no such agent into the dialog.

// trustProblem is claudetrust.Problem for profile name, read once per run
// (Claude Code's config file can be large). Loop only.
func (e *Engine) trustProblem(name string, p config.AgentProfile) string {
	if e.trust == nil {
		e.trust = map[string]string{}
	}
	msg, ok := e.trust[name]
	if !ok {
		msg = claudetrust.Problem(name, p, e.opt.Dir.Root)
		e.trust[name] = msg
		if msg != "" {
			e.emit(Event{Kind: EvAlert, Text: msg, Fields: map[string]any{"trust": name}})
		}
	}
	return msg
}

// preflightTrust says at the start of a run whether the default agent
// would stop at the trust dialog. Loop only.
func (e *Engine) preflightTrust() {
	name := e.cfg.Agents.Default
	if p, ok := e.cfg.Profile(name); ok {
		e.trustProblem(name, p)
	}
}

// intoDialog reports whether profile name's agent would start at the
// trust dialog on task taskID: its repository is not trusted (said once)
// and neither is that task's worktree itself (a person may have answered
// the dialog there). Loop only.
func (e *Engine) intoDialog(name string, p config.AgentProfile, taskID string) bool {
	if e.trustProblem(name, p) == "" {
		return false
	}
	dir, _, err := worktree.Name(name, taskID)
	return err != nil || !claudetrust.Trusted(claudetrust.ConfigFile(p.Env), filepath.Join(e.opt.Dir.Root, dir))
}
