package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/agent/transcript"
	"github.com/chorus-dev/chorus/agent/usage"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/worktree"
)

// The agent process side of a run: its PTY and screen, spawning with the
// output pump, typing into it, settling and stopping it. What to do next
// is decided elsewhere (policy.go).

// replyWriter forwards the emulator's replies (DA1, CPR…) to whichever
// process is current.
type replyWriter struct{ r *agentRun }

func (w replyWriter) Write(p []byte) (int, error) {
	if pr := w.r.proc.Load(); pr != nil {
		// An agent host parses nothing while the engine is connected
		// (see host.Client.Track): this copy answers for it too.
		return pr.Write(p)
	}
	return len(p), nil
}

// inputWriter passes a front end's keys to whichever process is current.
type inputWriter struct{ r *agentRun }

func (w inputWriter) Write(p []byte) (int, error) {
	if pr := w.r.proc.Load(); pr != nil {
		return pr.Write(p)
	}
	return len(p), nil
}

// Screen returns an agent's terminal emulator (nil for unknown agents), for
// front ends to draw. It outlives respawns within the run.
func (e *Engine) Screen(agentID string) *term.Emulator {
	// The runs last published answer without a turn of the loop: a TUI
	// attaching asks for every agent's, and each turn was a batch of its
	// own (the state encoded, a snapshot published and encoded again for
	// the TUIs) before the next agent's.
	e.snapMu.Lock()
	s := e.screens[agentID]
	e.snapMu.Unlock()
	if s != nil {
		return s
	}
	_ = e.do(context.Background(), func() {
		if r := e.runs[agentID]; r != nil {
			s = r.screen
		}
	})
	return s
}

// Input returns a writer to an agent's terminal, for a front end passing
// keys through; writes go to whichever process the agent currently runs
// and are dropped between processes.
func (e *Engine) Input(agentID string) io.Writer {
	var w io.Writer = io.Discard
	_ = e.do(context.Background(), func() {
		if r := e.runs[agentID]; r != nil {
			w = inputWriter{r}
		}
	})
	return w
}

// Resize sets an agent's terminal size: emulator first, then the PTY.
func (e *Engine) Resize(agentID string, cols, rows int) {
	_ = e.do(context.Background(), func() {
		if r := e.runs[agentID]; r != nil {
			r.resize(cols, rows)
		}
	})
}

func (r *agentRun) resize(cols, rows int) {
	if cols < 2 || rows < 2 {
		return
	}
	r.size.Store(uint64(cols)<<32 | uint64(rows))
	r.screen.Resize(cols, rows)
	if p := r.proc.Load(); p != nil {
		_ = p.Resize(uint16(cols), uint16(rows))
	}
}

func (r *agentRun) dims() (int, int) {
	v := r.size.Load()
	return int(v >> 32), int(v & 0xffffffff)
}

// finishGrace bounds how long a headless agent that has signalled is left
// to end by itself: it exits right after its result event, which carries
// its usage and cost.
const finishGrace = 30 * time.Second

// settle ends an agent that has signalled. A headless one is first left to
// finish on its own (up to finishGrace); then the process is stopped and
// its output read to the end, so whatever usage it reported is booked
// before the run goes on.
func (r *agentRun) settle(p agentProc, gen int) {
	if p == nil {
		return
	}
	if !r.interactive() {
		t := time.NewTimer(finishGrace)
		select {
		case <-p.Done():
		case <-t.C:
			r.event(EvAlert, "the agent did not end after signalling; stopping it", nil)
		case <-r.ctx.Done():
		}
		t.Stop()
	}
	r.stopProc(p)
	r.awaitExit(gen)
}

// awaitExit waits for the output pump of process generation gen to report
// the exit: it sends that only after reading (and booking) everything the
// process wrote. Other events still queued are from the ending process
// and are dropped.
func (r *agentRun) awaitExit(gen int) {
	t := time.NewTimer(10 * time.Second) // a pump outlives its process only if a grandchild holds the PTY
	defer t.Stop()
	for {
		select {
		case ev := <-r.events:
			if ev.exited && ev.gen == gen {
				return
			}
		case <-t.C:
			return
		case <-r.ctx.Done():
			return
		}
	}
}

func (r *agentRun) interactive() bool {
	return r.profile.Format == config.FormatTerminal
}

// env is the agent's environment.
func (r *agentRun) env(iteration int) []string {
	e := r.e
	env := []string{
		signal.EnvTaskID + "=" + r.taskID,
		signal.EnvAgentID + "=" + r.id,
		signal.EnvKey + "=" + r.key,
		signal.EnvDir + "=" + e.opt.Dir.Path,
		"BEADS_ACTOR=" + e.actorFor(r.id),
		"BEADS_DIR=" + filepath.Join(e.opt.Dir.Root, ".beads"),
	}
	if iteration > 0 {
		env = append(env, "CHORUS_ITERATION="+strconv.Itoa(iteration))
	}
	if dir := r.chorusPath(); dir != "" {
		path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
		if fast := fastSignalDir(e.opt.Dir, e.opt.ChorusExe); fast != "" {
			path = fast + string(os.PathListSeparator) + path
		}
		env = append(env, "PATH="+path, signal.EnvExe+"="+e.opt.ChorusExe)
	}
	return append(env, r.profile.Env...)
}

// chorusPath is the folder of the chorus executable agents run, or "".
func (r *agentRun) chorusPath() string {
	if r.e.opt.ChorusExe == "" {
		return ""
	}
	return filepath.Dir(r.e.opt.ChorusExe)
}

// argv builds the command line: profile args, extra options, model
// override, prompt.
func (r *agentRun) argv(t beads.Task, prompt string, extra ...string) []string {
	argv := append([]string{r.profile.Command}, r.profile.Args...)
	argv = append(argv, extra...)
	if m, ok := t.Metadata[beads.MetaModel].(string); ok && m != "" && r.profile.AllowModelOverride && r.profile.ModelFlag != "" {
		argv = append(argv, r.profile.ModelFlag, m)
	}
	if r.profile.Prompt == "" || r.profile.Prompt == config.PromptArg {
		argv = append(argv, prompt)
	}
	return argv
}

// promptFile is where a prompt too long for argv goes (promptArg).
func (r *agentRun) promptFile() string {
	return filepath.Join(r.e.opt.Dir.Logs(), worktree.Slug(r.id)+".prompt.md")
}

// spawn starts the agent process and its output pump. record (the
// iteration's state) is applied in the same engine message as the pid:
// one state write on the start path instead of one per fact.
func (r *agentRun) spawn(t beads.Task, wt worktree.Worktree, prompt string, it, gen int, det *signal.Detector, record func(*State, *AgentState)) (agentProc, error) {
	e := r.e
	cols, rows := r.dims()
	if err := os.MkdirAll(e.opt.Dir.Logs(), 0o755); err != nil {
		return nil, err
	}
	spawned := time.Now()
	// A NUL cannot be passed in argv (exec fails with EINVAL) nor typed.
	prompt = strings.ReplaceAll(prompt, "\x00", "")
	arg, err := promptArg(prompt, r.promptFile())
	if err != nil {
		return nil, fmt.Errorf("writing the prompt file: %w", err)
	}
	r.trustWorktree(wt.Dir, r.env(it))
	spec := ptyproc.Spec{
		Argv: r.argv(t, arg, r.codexTrustArgs(wt.Dir)...), Dir: wt.Dir, Env: r.env(it), Unset: []string{"CLAUDECODE"},
		Cols: uint16(cols), Rows: uint16(rows),
		LogPath: filepath.Join(e.opt.Dir.Logs(), worktree.Slug(r.id)+".log"),
	}
	var oh *openedHost
	if r.hostRunner != nil {
		if oh, err = r.openHost(r.hostRunner, spec, wt); err != nil {
			return nil, fmt.Errorf("starting %s: %w", r.profile.Command, err)
		}
	}
	// The hold is looked at again with the start gate held: a hold set
	// since the run's first look (another task's agent failed meanwhile)
	// keeps this agent from starting, and one set after it sees the start.
	r.e.startMu.Lock()
	gated := true
	ungate := func() {
		if gated {
			gated = false
			r.e.startMu.Unlock()
		}
	}
	defer ungate()
	if h := r.held(); h != "" {
		if oh != nil {
			oh.discard()
		}
		return nil, heldError(h)
	}
	started := r.starting() // its first signal may arrive before its pid is known
	defer started()
	var p agentProc
	if oh != nil {
		p, err = r.startHosted(oh, spec, wt)
	} else {
		var lp *ptyproc.Proc
		if lp, err = ptyproc.Start(spec); err == nil {
			p = lp
		}
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", r.profile.Command, err)
	}
	r.proc.Store(p)
	started()
	pid, pstart := p.Pid(), p.StartTime()
	cmd := strings.Join(r.argv(t, "…")[:1], " ")
	r.update(func(s *State, a *AgentState) {
		record(s, a)
		r.e.started(r.taskID)
		a.PID, a.PStart, a.Status = pid, pstart, AgentRunning
		r.e.emit(Event{Kind: EvStarted, Agent: r.id, Task: r.taskID, Text: cmd, Fields: map[string]any{"pid": pid, "iteration": it}})
	})
	ungate()
	r.follow(p, wt, it, gen, det, spawned)
	if r.profile.Prompt == config.PromptType {
		if err := r.typeInto(p, arg); err != nil {
			r.event(EvAlert, "typing the prompt: "+err.Error(), nil)
		}
	}
	return p, nil
}

// follow starts reading a running agent: its transcript (when its CLI
// keeps one, from spawned on), its output and its screen.
func (r *agentRun) follow(p agentProc, wt worktree.Worktree, it, gen int, det *signal.Detector, spawned time.Time) {
	// An interactive Claude Code or Codex records the assistant's messages
	// and usage in its session files: signals come from there (source
	// "transcript"), not from its screen. The pump reports the exit only
	// once the last of them is read.
	followed := make(chan struct{})
	if kind := r.profile.TranscriptKind(); kind != "" {
		rd, err := transcript.New(transcript.Options{Kind: kind, Env: r.env(it), Dir: wt.Dir, Since: spawned})
		if err != nil {
			close(followed)
			r.event(EvError, "reading the agent's transcript: "+err.Error(), nil)
		} else {
			r.meters.Add(1)
			go func() {
				defer r.meters.Done()
				defer close(followed)
				transcript.Follow(rd, p.Done(), func(u transcript.Update) {
					r.stuck.noteActivity(time.Now()) // the record moved: the agent works
					// Usage first: a completion must find its cost booked.
					r.reportUsage(fromTokens(u.Usage))
					for _, s := range u.Signals {
						r.send(turnEvent{sig: &s, gen: gen, source: "transcript"})
					}
					for _, v := range u.NearMisses {
						r.nearMiss(v, "transcript", gen)
					}
					if u.TurnsEnded > 0 && len(u.Signals) == 0 && len(u.NearMisses) == 0 {
						r.send(turnEvent{turnEnded: true, gen: gen, source: "transcript", at: time.Now()})
					}
				})
			}()
		}
	} else {
		close(followed)
	}
	go r.pump(p, gen, det, followed)
	go r.watchStuck(p)
}

// pump feeds output to the screen and the detectors, then reports the exit.
// Signals found in the output, and in the transcript (followed is closed
// once it is read to the end), reach the supervisor before the exit does.
// Screen text is a signal channel only for agents without a transcript or
// structured events: a structured record tells the assistant's words from
// the tool output and documents it displays, the screen does not.
func (r *agentRun) pump(p agentProc, gen int, det *signal.Detector, followed <-chan struct{}) {
	var from uint64
	screenSignals := r.profile.TranscriptKind() == "" && r.profile.Format == config.FormatTerminal
	limits := limitScanner{events: r.profile.Format != config.FormatTerminal}
	scan := func() {
		text, next := r.screen.TextSince(from)
		from = next
		if !r.sawBusy.Load() && busyShown(text) {
			r.sawBusy.Store(true)
		}
		// The screen is read for a stuck agent whatever carries its signals.
		r.stuck.poke()
		if f, ok := limits.screen(text); ok {
			r.send(turnEvent{limit: &f, gen: gen})
		}
		if !screenSignals {
			return
		}
		var found []signal.Found
		r.detect(func() { found = det.Snapshot(text) })
		for _, f := range found {
			if f.Err != nil {
				r.event(EvError, "ignored signal "+f.Raw+": "+f.Err.Error(), nil)
				continue
			}
			s := f.Signal
			r.send(turnEvent{sig: &s, gen: gen, source: "output"})
		}
	}
	events := newEventParser(r.profile.Format)
	deliver := func(sigs []signal.Signal) {
		// Usage first: a completion read from the same event must find
		// its cost booked.
		r.reportUsage(events.usageDelta())
		for _, why := range events.failures() {
			r.event(EvAlert, r.profile.Command+" reported: "+why, map[string]any{"agentError": why})
		}
		for _, s := range sigs {
			r.send(turnEvent{sig: &s, gen: gen, source: "events"})
		}
		for _, v := range events.nearMisses() {
			r.nearMiss(v, "events", gen)
		}
	}
	write := func(b []byte) {
		_, _ = r.screen.Write(b)
		deliver(events.feed(b))
		if f, ok := limits.feed(b); ok {
			r.send(turnEvent{limit: &f, gen: gen})
		}
	}
	gap := scanGap
	if !screenSignals {
		gap = quietScanGap
	}
	hp, _ := p.(*hostedProc)
	for {
		var untrack func()
		if hp != nil {
			// The host keeps this screen's checkpoints instead of a copy
			// of its own.
			untrack = hp.cur().Track(r.screen)
		}
		r.drain(p.Output(), write, scan, gap)
		if untrack != nil {
			untrack()
		}
		if hp == nil || !r.hostConnEnded(hp) {
			break
		}
	}
	deliver(events.flush())
	scan()
	code, _ := p.Wait()
	lost := ""
	if hp != nil {
		lost = hp.lost
	}
	select {
	case <-followed:
	case <-time.After(10 * time.Second): // a transcript reader stuck on a slow disk must not hold the exit
	}
	r.send(turnEvent{exited: true, code: code, gen: gen, reason: events.failure, lost: lost})
}

// drain writes an agent's output until it closes, scanning the screen at
// most once per gap: a burst, or a CLI redrawing its status line many
// times a second, is read once, and what came last is always read (the
// timer, then the scan at exit).
func (r *agentRun) drain(out <-chan []byte, write func([]byte), scan func(), gap time.Duration) {
	var last time.Time
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	pending := false
	for out != nil {
		select {
		case chunk, ok := <-out:
			if !ok {
				out = nil
				continue
			}
			write(chunk)
			if wait := gap - time.Since(last); wait > 0 {
				if !pending {
					pending = true
					// On the readers' grid: the process wakes there
					// anyway.
					due.Reset(time.Until(ptyproc.OnGrid(time.Now().Add(wait))))
				}
				continue
			}
		case <-due.C:
		}
		pending = false
		scan()
		last = time.Now()
	}
}

// scanGap is the least time between two reads of an agent's screen text
// while it prints (see pump).
const scanGap = 50 * time.Millisecond

// quietScanGap is scanGap for an agent whose signals do not come from its
// screen: the scan only looks for a usage limit and the first busy line,
// which a quarter second later still serve.
const quietScanGap = 250 * time.Millisecond

// limitScanner looks for the account's usage limit in one process's
// output: a headless CLI's events line by line, an interactive one's new
// screen text. It reports the first only: one is enough to hold the run.
type limitScanner struct {
	events bool // the output is JSON events, one a line
	line   []byte
	found  bool
}

func (l *limitScanner) feed(b []byte) (usage.Finding, bool) {
	if !l.events || l.found {
		return usage.Finding{}, false
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(l.line) < 1<<20 {
				l.line = append(l.line, b...)
			}
			return usage.Finding{}, false
		}
		l.line = append(l.line, b[:i]...)
		b = b[i+1:]
		f, ok := usage.Line(string(l.line), time.Now())
		l.line = l.line[:0]
		if ok {
			l.found = true
			return f, true
		}
	}
	return usage.Finding{}, false
}

func (l *limitScanner) screen(text string) (usage.Finding, bool) {
	if l.events || l.found {
		return usage.Finding{}, false
	}
	f, ok := usage.Screen(text, time.Now())
	l.found = ok
	return f, ok
}

// typeInto delivers text to a live agent and verifies it arrived.
func (r *agentRun) typeInto(p agentProc, text string) error {
	retry := func(attempt int) {
		r.event(EvAlert, fmt.Sprintf("input not confirmed; pressing Enter again (attempt %d)", attempt), map[string]any{"inputRetry": attempt})
	}
	opts := ptyproc.TypeOptions{Paste: r.screen.InputModes().BracketedPaste, OnRetry: retry}
	if r.sawBusy.Load() {
		// Claude Code shows text submitted while a turn runs as sent, yet
		// drops it when the turn ends just then: type only into an idle
		// agent, and count it delivered once a turn starts.
		if err := r.waitIdle(p); err != nil {
			return err
		}
		opts.Marker = busyWord
	}
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	return p.Type(ctx, text, opts)
}

// busyShown reports the busy marker near the bottom of a screen, where
// the CLIs keep their status line, so that the words in a prompt or in the
// agent's output do not count.
func busyShown(screen string) bool {
	lines := strings.Split(strings.TrimRight(screen, " \n"), "\n")
	n := 0
	for i := len(lines) - 1; i >= 0 && n < 6; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		n++
		if strings.Contains(lines[i], busyMarker) {
			return true
		}
	}
	return false
}

// waitIdle waits until the agent's screen no longer shows it busy. A turn
// may run for as long as the agent works, so only the run's end or the
// process's bounds the wait.
func (r *agentRun) waitIdle(p agentProc) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for busyShown(r.screen.Text()) {
		select {
		case <-tick.C:
		case <-p.Done():
			return errors.New("the agent exited before it was ready for input")
		case <-r.ctx.Done():
			return context.Cause(r.ctx)
		}
	}
	return nil
}

// stopProc ends the agent: the profile's exit input first when it has one,
// then SIGTERM to the group and SIGKILL after the grace period.
func (r *agentRun) stopProc(p agentProc) {
	if p == nil {
		return
	}
	grace := time.Duration(r.e.cfg.Completion.StopGraceSeconds) * time.Second
	if r.profile.ExitInput != "" {
		_, _ = p.Write([]byte(r.profile.ExitInput))
		_, _ = p.Write([]byte("\r"))
		select {
		case <-p.Done():
			return
		case <-time.After(min(grace, 3*time.Second)):
		}
	}
	p.Stop(grace)
}
