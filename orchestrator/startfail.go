package orchestrator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/config"
)

// Start failures: a task whose agent cannot start (missing binary, a task
// that cannot be read, a prompt the kernel refuses) must not be re-assigned
// hot forever. Each failure backs the task off; after the limit it is
// FAILED with the reason. A missing agent command, or different tasks
// failing to start the same way, hold the run (outage.go): every task
// would fail alike.

const (
	startBackoffBase = time.Second
	startBackoffMax  = time.Minute
	// maxArgPrompt is the longest prompt passed as one argv element. Linux
	// refuses a single argument over 128 KiB (MAX_ARG_STRLEN); longer
	// prompts go through a file the agent is told to read.
	maxArgPrompt = 96 << 10
)

// missingCommand is why a profile's command cannot be found, or "".
func missingCommand(p config.AgentProfile, extraPath string) string {
	cmd := p.Command
	if cmd == "" {
		return "the agent profile has no command"
	}
	if strings.ContainsRune(cmd, filepath.Separator) {
		if st, err := os.Stat(cmd); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Sprintf("agent command %s is not an executable file", cmd)
		}
		return ""
	}
	if _, err := exec.LookPath(cmd); err == nil {
		return ""
	}
	if extraPath != "" {
		if st, err := os.Stat(filepath.Join(extraPath, cmd)); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return ""
		}
	}
	return fmt.Sprintf("agent command %q not found on PATH: install it, or set agents.default (or the task's agent) to one you have; `chorus doctor` lists them", cmd)
}

// startLimit is how many start failures in a row a task (or the session)
// gets before Chorus stops trying.
func (e *Engine) startLimit() int {
	if n := e.cfg.Completion.MaxAgentErrors; n > 0 {
		return n
	}
	return 3
}

// startFailed books a run that ended before its agent ran. Loop only.
func (e *Engine) startFailed(r *agentRun, o outcome) {
	if e.closing || r.ctx.Err() != nil {
		return // ended from outside (shutdown, stop), not a failure to start
	}
	if DiskFull(o.reason) {
		// Not the task's failure: every start would fail alike until a
		// person frees space and resumes.
		delete(e.startFails, r.taskID)
		delete(e.retryAt, r.taskID)
		e.diskFull(r.taskID, o.reason)
		return
	}
	if e.startFails == nil {
		e.startFails, e.retryAt = map[string]int{}, map[string]time.Time{}
	}
	e.startFails[r.taskID]++
	n := e.startFails[r.taskID]
	limit := e.startLimit()
	switch {
	case o.kind == outUnstartable:
		// Retrying cannot help until a person installs the command or
		// changes the config: every task would fail the same way. The
		// run holds and probes (each probe is one look on PATH).
		delete(e.retryAt, r.taskID)
		e.holdRun(o.reason, r.taskID)
		return
	case n >= limit:
		// Held back until the store says FAILED: a ready list read in
		// between (the store changed, a slot freed) still shows it open.
		e.retryAt[r.taskID] = time.Now().Add(time.Hour)
		reason := fmt.Sprintf("cannot start an agent (%d attempts): %s", n, o.reason)
		id := r.taskID
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			if err := markFailed(e.opt.Store, id, reason); err != nil {
				e.post(func() {
					delete(e.retryAt, id)
					e.emit(Event{Kind: EvError, Task: id, Text: "marking the task failed: " + err.Error()})
				})
				return
			}
			e.post(func() {
				delete(e.retryAt, id)
				e.needReady = true
				e.st.run(id).setFailed(reason, "")
				e.st.Stats.TasksFailed++
				e.emit(Event{Kind: EvFailed, Task: id, Text: reason})
			})
		}()
	default:
		wait := min(startBackoffBase<<(n-1), startBackoffMax)
		e.retryAt[r.taskID] = time.Now().Add(wait)
		// Not counted in e.wg: shutdown must not wait out a back-off.
		time.AfterFunc(wait, func() {
			select {
			case e.msgs <- func() { e.needReady = true; e.dirty = false }:
			case <-e.loopDone:
			}
		})
	}
	// Different tasks failing to start the same way: the run's cause.
	if key, _ := failureCause(o.reason); e.st.Mode == config.ModeAutopilot && e.streak.failed(r.taskID, key, o.reason) {
		e.holdRun(o.reason, r.taskID)
	}
}

// holdRun holds the run for a cause every task shares, or renews the hold
// after a probe that failed the same way. Loop only.
func (e *Engine) holdRun(failure, task string) {
	key, cause := failureCause(failure)
	if h := e.st.Hold; h != nil && h.Key == key {
		if e.probe == task || e.probe == "" {
			e.setHold(holdFor(h, h.Kind, key, cause, time.Now(), e.holdBase()), task)
		}
		return
	}
	if key == cause { // a known cause: name it, then what was seen
		cause += ": " + oneLine(failure, 300)
	}
	e.setHold(holdFor(nil, HoldOutage, key, cause, time.Now(), e.holdBase()), task)
}

// started clears a task's start failures once its agent runs. Loop only.
func (e *Engine) started(taskID string) {
	delete(e.startFails, taskID)
	delete(e.retryAt, taskID)
}

// backingOff reports whether a task waits out a start failure. Loop only.
func (e *Engine) backingOff(taskID string) bool {
	t, ok := e.retryAt[taskID]
	return ok && time.Now().Before(t)
}

// waitingRetry reports whether some task will be retried later, so that
// autopilot is not idle yet. Loop only.
func (e *Engine) waitingRetry() bool {
	for _, t := range e.retryAt {
		if time.Now().Before(t) {
			return true
		}
	}
	return false
}

// promptArg is what goes on the command line for prompt: the prompt
// itself, or for one too long for argv, a pointer to a file holding it.
func promptArg(prompt, file string) (string, error) {
	if len(prompt) <= maxArgPrompt {
		return prompt, nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(file, []byte(prompt), 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("Your instructions are too long for the command line: they are in the file %s. Read that whole file now and follow it exactly.", file), nil
}
