package orchestrator

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/agent/claudetrust"
	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/stuck"
	"github.com/chorus-dev/chorus/config"
)

// stuckWatch notices an interactive agent that waits for a person (a login
// prompt, a dialog, model API errors that persist, a dead endpoint): the
// output pump pokes it after each burst, and it looks again by itself when
// a verdict falls due without new output (a dialog sits still).
type stuckWatch struct {
	once sync.Once
	c    chan struct{}
	// activity is when the agent's structured record (its transcript) last
	// moved, in Unix nanoseconds; 0 while nobody reports it.
	activity atomic.Int64
}

func (w *stuckWatch) wake() chan struct{} {
	w.once.Do(func() { w.c = make(chan struct{}, 1) })
	return w.c
}

// poke asks for a look at the screen; it never blocks.
func (w *stuckWatch) poke() {
	select {
	case w.wake() <- struct{}{}:
	default:
	}
}

// noteActivity records that the agent's transcript moved at t.
func (w *stuckWatch) noteActivity(t time.Time) { w.activity.Store(t.UnixNano()) }

// watchStuck judges the screen of process p until it exits. Headless
// agents print JSON, not a screen: their failures come from their events.
func (r *agentRun) watchStuck(p agentProc) {
	if !r.interactive() {
		return
	}
	w := stuck.NewWatcher(stuck.Options{})
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var last time.Time // the last look
	waiting := false   // a poke came too soon after it: look when the gap has passed
	arm := func() {
		timer.Stop()
		due := w.Due()
		if waiting && (due.IsZero() || last.Add(stuckLookGap).Before(due)) {
			due = last.Add(stuckLookGap)
		}
		if !due.IsZero() {
			timer.Reset(time.Until(ptyproc.OnGrid(due)))
		}
	}
	for {
		select {
		case <-r.stuck.wake():
			if time.Since(last) < stuckLookGap {
				if !waiting {
					waiting = true
					arm()
				}
				continue
			}
		case <-timer.C:
		case <-p.Done():
			if w.Verdict().Cause != stuck.None {
				r.setStuck(stuck.Verdict{}) // the process is gone; so is what it showed
			}
			return
		case <-r.closed:
			return
		}
		var act time.Time
		if n := r.stuck.activity.Load(); n != 0 {
			act = time.Unix(0, n)
		}
		last, waiting = time.Now(), false
		if v, changed := w.Observe(last, r.screen.Text(), act); changed {
			r.setStuck(v)
		}
		arm()
	}
}

// stuckLookGap is the least time between two looks at a busy screen: what
// stops an agent must persist for seconds before it counts, and a look
// per chunk of output cost as much as the terminal emulation.
const stuckLookGap = 250 * time.Millisecond

// setStuck shows a verdict on the agent (status NEEDS_HUMAN, the cause as
// its alert, an event), or clears it.
func (r *agentRun) setStuck(v stuck.Verdict) {
	text := v.Finding.String()
	_ = r.e.do(r.ctx, func() {
		a := r.e.st.Agents[r.id]
		if a == nil {
			return
		}
		if v.Cause == stuck.None {
			if a.Stuck == "" {
				return
			}
			if a.Status == AgentNeedsHuman {
				a.Status = AgentRunning
			}
			if a.Alert == a.Stuck {
				a.Alert = ""
			}
			r.e.emit(Event{Kind: EvNeedsHumanCleared, Agent: r.id, Task: r.taskID, Text: "no longer " + a.Stuck})
			a.Stuck = ""
			return
		}
		if a.Status == AgentRunning || a.Status == AgentStarting {
			a.Status = AgentNeedsHuman
		}
		a.Stuck, a.Alert = text, text
		r.e.emit(Event{Kind: EvNeedsHuman, Agent: r.id, Task: r.taskID, Text: text,
			Fields: map[string]any{"cause": string(v.Cause), "status": v.Status, "retrying": v.Retrying, "since": v.Since}})
	})
}

// Events of a stuck agent: EvNeedsHuman when its screen shows it cannot
// go on without a person (Text says why, Fields["cause"] the kind),
// EvNeedsHumanCleared when the screen recovered.
const (
	EvNeedsHuman        EventKind = "needs_human"
	EvNeedsHumanCleared EventKind = "needs_human_cleared"
)

// trustsClaude says whether the agent is a Claude Code whose worktrees
// are marked trusted (agents.*.trustWorktrees, or the repository's own
// trust inherited).
func (r *agentRun) trustsClaude(env []string) bool {
	if r.profile.TranscriptKind() != config.TranscriptClaude {
		return false
	}
	// Otherwise the run said so at its start (trust.go).
	return r.profile.TrustWorktrees || claudetrust.RepoTrusted(claudetrust.ConfigFile(env), r.e.opt.Dir.Root)
}

// codexTrustArgs are the options that tell an interactive Codex agent, for
// this run only, that its worktree (and the repository it belongs to,
// which is what Codex asks about) are trusted, when its profile asks for
// trustWorktrees: otherwise its first run in each new worktree waits at
// "Trust this folder?". Nothing is written to the user's Codex config. The
// table is given whole because -c splits a dotted key on every ".".
func (r *agentRun) codexTrustArgs(dir string) []string {
	if !r.profile.TrustWorktrees || r.profile.TranscriptKind() != config.TranscriptCodex || dir == "" {
		return nil
	}
	var entries []string
	for _, d := range []string{dir, r.e.opt.Dir.Root} {
		q, ok := tomlString(d)
		if !ok {
			r.event(EvAlert, "cannot tell Codex to trust "+strconv.Quote(d)+": the path has control characters", nil)
			return nil
		}
		entries = append(entries, q+`={trust_level="trusted"}`)
	}
	return []string{"-c", "projects={" + strings.Join(entries, ",") + "}"}
}

// tomlString quotes s as a TOML basic string; paths with control
// characters are refused rather than escaped.
func tomlString(s string) (string, bool) {
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return "", false
		}
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`, true
}

// trustWorktree marks an interactive Claude Code agent's worktree, exactly
// that path, trusted in the CLI's config when its profile asks for it or
// the user trusted the repository itself there (inherited), so the
// first-run trust dialog does not stop it. env is the agent's.
func (r *agentRun) trustWorktree(dir string, env []string) {
	if dir == "" || !r.trustsClaude(env) {
		return
	}
	file := claudetrust.ConfigFile(env)
	if err := claudetrust.Trust(file, dir); err != nil {
		r.event(EvAlert, "could not mark the worktree trusted for Claude Code: "+err.Error(), nil)
	}
}
