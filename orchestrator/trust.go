package orchestrator

import (
	"github.com/chorus-dev/chorus/agent/claudetrust"
	"github.com/chorus-dev/chorus/config"
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
