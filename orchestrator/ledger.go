package orchestrator

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/worktree"
)

// The ledger of a task is a Markdown file, .chorus/ledgers/<task>.md, that
// the engine appends to as the task's agents work: each iteration (number,
// agent, start and end, files changed, tokens so far), the signals, the
// quality results and the agents' own notes (`chorus note`). Every record
// is one O_APPEND write followed by fsync, so a crash loses at most the
// record being written and never rewrites what is there; a restarted
// engine appends to the same file. A respawned agent's handover is built
// from it, and `chorus task timeline` reads it.

// LedgersDir is the folder of the ledgers inside .chorus.
const LedgersDir = "ledgers"

// LedgerPath is the ledger file of a task in the .chorus directory
// chorusDir; the task id is made safe for a file name.
func LedgerPath(chorusDir, taskID string) string {
	return filepath.Join(chorusDir, LedgersDir, worktree.Slug(taskID)+".md")
}

// ledgerMu orders appends from the supervisors and the loop (notes).
var ledgerMu sync.Mutex

// ledgerState is a run's memory of its failures, for handing a task to a
// person instead of spending iterations on the same failure.
type ledgerState struct {
	mu        sync.Mutex
	failKey   string // fingerprint of the last failed check
	failCount int    // checks in a row that failed with failKey
	failText  string // the evidence: the last failed check
	started   bool   // an iteration was recorded
}

// appendLedger writes one record to the task's ledger, creating it with a
// header first. Errors go to the event stream: a ledger is worth having,
// never worth stopping an agent for.
func (r *agentRun) appendLedger(title, text string) {
	if err := appendLedgerFile(LedgerPath(r.e.opt.Dir.Path, r.taskID), r.taskID, title, text); err != nil {
		r.event(EvError, "writing the task ledger: "+err.Error(), nil)
	}
}

func appendLedgerFile(path, taskID, title, text string) error {
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		text = fmt.Sprintf("# Ledger of %s: %s\n\nKept by Chorus: one section per iteration; `note:` lines are the agents' own (`chorus note`).\n", taskID, oneLine(title, 200)) + text
	}
	// Not synced, like the session log: a killed process loses none of
	// it (the kernel holds the bytes), and an fsync per line under this
	// lock made every agent wait on the disk.
	_, err = f.WriteString(text)
	return err
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ledgerStart opens an iteration's section.
func (r *agentRun) ledgerStart(t beads.Task, it int) {
	r.led.mu.Lock()
	r.led.started = true
	r.led.mu.Unlock()
	r.appendLedger(t.Title, fmt.Sprintf("\n## Iteration %d · %s · started %s\n", it, r.id, stamp(time.Now())))
}

// ledgerLine records one event of the current iteration.
func (r *agentRun) ledgerLine(t beads.Task, what string) {
	r.appendLedger(t.Title, fmt.Sprintf("- %s %s\n", time.Now().UTC().Format("15:04:05Z"), oneLine(what, 2000)))
}

// ledgerEnd closes an iteration's section: when, the files it changed
// (base against the new HEAD), the task's tokens so far, and why it did
// not finish.
func (r *agentRun) ledgerEnd(t beads.Task, wt worktree.Worktree, base string, result string) {
	r.e.shareBranch(wt.Branch) // the iteration's work, for teammates (merge.pushBranches)
	files := "none"
	if base != "" {
		if fs, err := r.e.wt.ChangedFiles(context.Background(), wt, base); err == nil && len(fs) > 0 {
			files = strings.Join(fs, ", ")
		}
	}
	var tokens int64
	_ = r.e.do(context.Background(), func() {
		if tr := r.e.st.Tasks[t.ID]; tr != nil {
			tokens = tr.Usage.Tokens()
		}
		r.e.dirty = false // a read
	})
	if result = strings.TrimSpace(result); result == "" {
		result = "not finished"
	}
	result = oneLine(strings.SplitN(result, "\n", 2)[0], 300)
	r.appendLedger(t.Title, fmt.Sprintf("- ended %s · tokens %d · files: %s · result: %s\n", stamp(time.Now()), tokens, oneLine(files, 2000), result))
}

// ledgerFinal records how the task's run ended.
func (r *agentRun) ledgerFinal(o outcome) {
	r.led.mu.Lock()
	started := r.led.started
	r.led.mu.Unlock()
	if !started {
		return // it never ran an iteration: nothing to close
	}
	text := string(o.kind)
	if o.reason != "" {
		text += ": " + o.reason
	}
	r.appendLedger("", fmt.Sprintf("- %s run ended: %s\n", time.Now().UTC().Format("15:04:05Z"), oneLine(text, 500)))
}

// note records what an agent chose to write down (`chorus note`).
func (r *agentRun) note(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	r.appendLedger("", fmt.Sprintf("- %s note: %s\n", time.Now().UTC().Format("15:04:05Z"), oneLine(text, 2000)))
	r.event(EvNote, text, nil)
}

// EvNote is an agent's note, also written to its task's ledger.
const EvNote EventKind = "note"

// qualityDone reports a check's results (events, ledger) and counts
// checks failing the same way in a row.
func (r *agentRun) qualityDone(t beads.Task, ok bool, results []QualityResult) {
	for _, q := range results {
		word := map[bool]string{true: "passed", false: "failed"}[q.Passed]
		fields := map[string]any{"name": q.Name, "passed": q.Passed, "required": q.Required, "exitCode": q.ExitCode}
		if !q.Passed {
			fields["tail"] = lastLines(q.Output, 3) // what front ends show of it
		}
		r.event(EvQuality, fmt.Sprintf("%s %s", q.Name, word), fields)
		r.ledgerLine(t, fmt.Sprintf("quality %s: %s (exit %d)", q.Name, word, q.ExitCode))
	}
	r.led.mu.Lock()
	if ok || len(results) == 0 {
		r.led.failKey, r.led.failCount, r.led.failText = "", 0, ""
	} else {
		key := failureKey(results)
		if key == r.led.failKey {
			r.led.failCount++
		} else {
			r.led.failKey, r.led.failCount = key, 1
		}
		r.led.failText = describeFailure(results)
	}
	key, n, text := r.led.failKey, r.led.failCount, r.led.failText
	r.led.mu.Unlock()
	failName, failTail := "", ""
	for _, q := range results {
		if !q.Passed && q.Required {
			failName, failTail = q.Name, lastLines(q.Output, 3)
		}
	}
	r.update(func(s *State, a *AgentState) {
		tr := s.run(t.ID)
		tr.FailKey, tr.FailStreak, tr.FailText = key, n, text
		if a != nil {
			a.Check, a.CheckStarted = "", time.Time{}
		}
		if ok {
			tr.FailCheck, tr.FailTail = "", ""
		} else if failName != "" && r.ctx.Err() == nil {
			tr.FailCheck, tr.FailTail = failName, failTail
			s.Stats.ChecksFailed++
		}
	})
}

// checkStarted shows which quality command runs for the agent, and since
// when.
func (r *agentRun) checkStarted(name string) {
	now := time.Now().UTC()
	r.update(func(_ *State, a *AgentState) {
		if a != nil {
			a.Check, a.CheckStarted = name, now
		}
	})
}

// volatile are the parts of a command's output that change between two
// runs of the same failure (timings, addresses, counters).
var volatile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`0x[0-9a-fA-F]+|[0-9]+(\.[0-9]+)?`) })

// failureKey fingerprints the required commands that failed: name, exit
// code and output with its numbers blanked.
func failureKey(results []QualityResult) string {
	h := sha256.New()
	for _, q := range results {
		if q.Passed || !q.Required {
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", q.Name, q.ExitCode, volatile().ReplaceAllString(q.Output, "#"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// handToPerson hands the task to a person when more iterations would
// only repeat themselves (the policy's needs-person): the agent is
// stopped, its work kept, the task blocked with the evidence.
func (r *agentRun) handToPerson(t beads.Task, wt worktree.Worktree, p agentProc, reason string) outcome {
	r.stopProc(p)
	r.commitWIP(wt, "needs a person")
	r.update(func(s *State, a *AgentState) {
		if a != nil {
			a.Status, a.Alert = AgentNeedsHuman, reason
		}
	})
	r.event(EvNeedsHuman, reason, map[string]any{"cause": "repeated-failure"})
	if err := r.e.opt.Store.Block(context.Background(), t.ID, reason); err != nil {
		r.event(EvError, "marking blocked: "+err.Error(), nil)
	}
	return outcome{kind: outBlocked, reason: reason}
}

// ledgerHandoverMax bounds what a handover quotes from the ledger.
const ledgerHandoverMax = 3000

// ledgerDigest is what a respawned agent is told from the ledger: every
// note and each iteration's end, the most recent kept when it is long.
func ledgerDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	iter := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## Iteration "):
			iter = strings.SplitN(strings.TrimPrefix(l, "## "), " · ", 2)[0]
		case strings.HasPrefix(l, "- ended "):
			if _, rest, ok := strings.Cut(l, " · files: "); ok {
				lines = append(lines, "- "+iter+": files "+rest)
			}
		case strings.Contains(l, " note: "):
			_, n, _ := strings.Cut(l, " note: ")
			lines = append(lines, "- "+iter+" note: "+n)
		}
	}
	total, from := 0, len(lines)
	for from > 0 {
		n := len(lines[from-1]) + 1
		if total+n > ledgerHandoverMax {
			break
		}
		total += n
		from--
	}
	if from == len(lines) {
		return ""
	}
	out := strings.Join(lines[from:], "\n")
	if from > 0 {
		out = fmt.Sprintf("(%d earlier entries left out)\n", from) + out
	}
	return out
}

// LedgerIteration is one iteration as the ledger records it.
type LedgerIteration struct {
	N       int       `json:"n"`
	Agent   string    `json:"agent"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitempty"`
	Tokens  int64     `json:"tokens"` // the task's tokens when it ended
	Files   []string  `json:"files,omitempty"`
	Result  string    `json:"result,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
	Signals []string  `json:"signals,omitempty"`
}

var ledgerHead = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^## Iteration (\d+) · (.*) · started (\S+)$`) })
var ledgerEnded = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^- ended (\S+) · tokens (\d+) · files: (.*) · result: (.*)$`)
})

// ReadLedger parses a ledger's iterations; a missing file is no error.
func ReadLedger(path string) ([]LedgerIteration, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var its []LedgerIteration
	for _, l := range strings.Split(string(b), "\n") {
		if m := ledgerHead().FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			st, _ := time.Parse(time.RFC3339, m[3])
			its = append(its, LedgerIteration{N: n, Agent: m[2], Start: st})
			continue
		}
		if len(its) == 0 {
			continue
		}
		cur := &its[len(its)-1]
		if m := ledgerEnded().FindStringSubmatch(l); m != nil {
			cur.End, _ = time.Parse(time.RFC3339, m[1])
			cur.Tokens, _ = strconv.ParseInt(m[2], 10, 64)
			if m[3] != "none" {
				cur.Files = strings.Split(m[3], ", ")
			}
			cur.Result = m[4]
		} else if _, n, ok := strings.Cut(l, " note: "); ok && strings.HasPrefix(l, "- ") {
			cur.Notes = append(cur.Notes, n)
		} else if _, s, ok := strings.Cut(l, " signal "); ok && strings.HasPrefix(l, "- ") {
			cur.Signals = append(cur.Signals, s)
		}
	}
	return its, nil
}
