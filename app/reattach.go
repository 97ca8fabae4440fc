package app

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/remote"
)

// afterLoss is what an attached TUI does once its engine's connection ended.
type afterLoss int

const (
	// lossExit: the engine stopped as asked (its lock let go), or it is
	// still alive: the TUI ends and says so, as it always did.
	lossExit afterLoss = iota
	// lossRestart: the engine died holding the repository (its lock file
	// left behind by a dead process): start a new one and attach to it.
	lossRestart
	// lossAttach: another engine already holds the repository (another
	// terminal started it first): attach to it.
	lossAttach
)

// decideLoss is the policy after the engine's connection ended: lock is
// the repository's lock once the old engine (pid old) is gone, alive
// whether that process still runs.
func decideLoss(lock chorusdir.LockState, old int, alive bool) afterLoss {
	switch {
	case alive:
		return lossExit
	case lock.Held && lock.Holder.PID != old:
		return lossAttach
	case lock.Stale():
		return lossRestart
	}
	return lossExit
}

// engineGoneWait bounds the wait for a lost engine's process to end: a
// clean stop closes its connections moments before it exits.
const engineGoneWait = 10 * time.Second

// replaceEngine is called when the attached engine's connection ended: a
// killed or crashed engine is replaced by a new one (its agents, in their
// hosts, are re-adopted by it) and the client of that one returned; nil
// when the engine stopped as asked and the TUI should end.
func replaceEngine(ctx context.Context, p *project, g *globals, old *remote.Client) (*remote.Client, error) {
	deadline := time.Now().Add(engineGoneWait)
	alive := processRuns(old.PID())
	for alive && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		alive = processRuns(old.PID())
	}
	lock, err := p.dir.InspectLock()
	if err != nil {
		return nil, err
	}
	snap := old.Snapshot()
	switch decideLoss(lock, old.PID(), alive) {
	case lossRestart:
		// The new engine runs as the old one did: its mode and limit.
		q := *p
		if snap.Mode == config.ModeAutopilot || snap.Mode == config.ModeSemiAuto {
			q.cfg.Mode = snap.Mode
		}
		o := &runOptions{maxAgents: snap.MaxParallel}
		if o.maxAgents < 0 || o.maxAgents > 32 {
			o.maxAgents = 0
		}
		if err := startEngine(ctx, &q, g, o); err != nil {
			// Another terminal may have started one first.
			if c, derr := dialEngine(ctx, p, remote.RoleTUI); derr == nil {
				return c, nil
			}
			return nil, err
		}
	case lossAttach:
	default:
		return nil, nil
	}
	return dialEngine(ctx, p, remote.RoleTUI)
}

// processRuns reports whether pid is a live process.
func processRuns(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// restartedNotice is the flash of a TUI back on a new engine.
func restartedNotice(old, now int) string {
	return fmt.Sprintf("the engine (pid %d) died; a new one (pid %d) took its agents back", old, now)
}
