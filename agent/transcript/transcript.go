// Package transcript follows the session records interactive agent CLIs
// write beside their terminal UI (Claude Code's transcripts, Codex's
// rollout files) and turns what the assistant wrote there into signals and
// usage. These records keep the assistant's own words apart from tool
// output and the user's messages, which the terminal's text does not.
package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/config"
)

// Update is what the records added since the last one.
type Update struct {
	Usage   signal.TokenUsage // a delta, priced where the record gives no cost
	Signals []signal.Signal   // tags that count in the final messages of turns that ended
	// NearMisses are the verdicts of turns that ended with a tag that did
	// not count (signal.Verdict), for the engine to ask for confirmation.
	NearMisses []signal.Verdict
	// TurnsEnded counts the turns that ended (signal or not), so the
	// engine can tell an agent that stopped without a signal.
	TurnsEnded int
}

// IsZero reports an update with nothing in it.
func (u Update) IsZero() bool {
	return u.Usage == (signal.TokenUsage{}) && len(u.Signals) == 0 && len(u.NearMisses) == 0 && u.TurnsEnded == 0
}

// Options say whose records to follow.
type Options struct {
	// Kind is config.TranscriptClaude or config.TranscriptCodex.
	Kind string
	// Env is the agent's environment on top of this process's: where
	// HOME, CLAUDE_CONFIG_DIR and CODEX_HOME point.
	Env []string
	// Dir is the agent's working directory: the records of sessions run
	// elsewhere are not this agent's.
	Dir string
	// Since is when the agent started: records written before belong to
	// earlier sessions in the same directory.
	Since time.Time
}

// Reader reads the new part of an agent's records on each Read.
type Reader struct {
	src   source
	since time.Time
	files map[string]*file
	final bool // the agent is gone: nothing more will be recorded
}

// source is what differs between the CLIs.
type source interface {
	// watchDirs are the folders whose changes may mean new records.
	watchDirs() []string
	// candidates are the record files that may be this agent's, with
	// whether their messages carry signals (a subagent's do not).
	candidates() map[string]bool
	// belongs reports whether a file whose first line is given is this
	// agent's; ok=false means it cannot tell yet.
	belongs(first []byte) (yes, ok bool)
	// relevant is a cheap test for lines worth decoding.
	relevant(line []byte) bool
	parser() lineParser
}

// lineParser is a signal parser of session records. Both CLIs record a
// turn's usage before its end (Claude on the message's own line, Codex's
// token_count before task_complete), so a completion finds its cost
// booked.
type lineParser interface {
	Parse([]byte) ([]signal.Event, error)
}

// flusher is a parser that may hold a turn's end until it knows the last
// message was read whole.
type flusher interface{ Flush() []signal.Event }

type file struct {
	off     int64
	decided bool
	mine    bool
	signals bool
	parse   lineParser
	usage   signal.TokenUsage // cumulative, as last reported
}

// New returns a Reader for an agent's records. An unknown kind is an
// error naming the ones there are.
func New(opt Options) (*Reader, error) {
	var src source
	switch opt.Kind {
	case config.TranscriptClaude:
		src = newClaude(opt)
	case config.TranscriptCodex:
		src = newCodex(opt)
	default:
		return nil, &kindError{opt.Kind}
	}
	return &Reader{src: src, since: opt.Since, files: map[string]*file{}}, nil
}

type kindError struct{ kind string }

func (e *kindError) Error() string {
	return "transcript kind " + `"` + e.kind + `"` + " is not known; use claude or codex"
}

// Read returns what the records gained since the last call. A line still
// being written is left for the next call.
func (r *Reader) Read() Update {
	var up Update
	paths := r.src.candidates()
	names := make([]string, 0, len(paths))
	for p := range paths {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		f := r.files[p]
		if f == nil {
			f = &file{signals: paths[p], parse: r.src.parser()}
			r.files[p] = f
		}
		r.readFile(p, f, &up)
	}
	return up
}

// Final reads what is left once the agent has exited.
func (r *Reader) Final() Update {
	r.final = true
	return r.Read()
}

func (r *Reader) readFile(path string, f *file, up *Update) {
	if f.decided && !f.mine {
		return
	}
	fh, err := os.Open(path)
	if err != nil {
		return
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || st.Size() <= f.off {
		return
	}
	if !f.decided && st.ModTime().Before(r.since.Add(-time.Second)) {
		return // an earlier session's record, untouched since the agent started
	}
	if _, err := fh.Seek(f.off, io.SeekStart); err != nil {
		return
	}
	rd := bufio.NewReaderSize(fh, 64<<10)
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			// An incomplete last line is read again next time; what was
			// read whole may end a turn.
			if fl, ok := f.parse.(flusher); ok {
				r.take(f, fl.Flush(), up)
			}
			return
		}
		if !f.decided {
			yes, ok := r.src.belongs(line)
			if !ok {
				return
			}
			f.decided, f.mine = true, yes
			if !yes {
				return
			}
		}
		f.off += int64(len(line))
		if !r.src.relevant(line) || r.before(line) {
			continue
		}
		evs, err := f.parse.Parse(line)
		if err != nil {
			continue
		}
		r.take(f, evs, up)
	}
}

// take adds a file's events to the update: usage, and the signals and
// near misses of turns that ended (not a subagent's).
func (r *Reader) take(f *file, evs []signal.Event, up *Update) {
	for _, ev := range evs {
		switch ev.Kind {
		case signal.Usage:
			up.Usage = add(up.Usage, sub(ev.Usage, f.usage))
			f.usage = ev.Usage
		case signal.TurnEnd:
			if !f.signals {
				continue
			}
			up.TurnsEnded++
			up.Signals = append(up.Signals, ev.Signals...)
			if ev.Verdict.NearMiss {
				up.NearMisses = append(up.NearMisses, ev.Verdict)
			}
		}
	}
}

// before reports a record line stamped before the agent started (a
// resumed session copies the old conversation).
func (r *Reader) before(line []byte) bool {
	var l struct {
		Timestamp time.Time `json:"timestamp"`
	}
	if json.Unmarshal(line, &l) != nil || l.Timestamp.IsZero() {
		return false
	}
	return l.Timestamp.Before(r.since)
}

func add(a, b signal.TokenUsage) signal.TokenUsage {
	return signal.TokenUsage{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead,
		CacheWrite: a.CacheWrite + b.CacheWrite, CostUSD: a.CostUSD + b.CostUSD}
}

func sub(a, b signal.TokenUsage) signal.TokenUsage {
	return signal.TokenUsage{Input: a.Input - b.Input, Output: a.Output - b.Output, CacheRead: a.CacheRead - b.CacheRead,
		CacheWrite: a.CacheWrite - b.CacheWrite, CostUSD: a.CostUSD - b.CostUSD}
}

// getenv reads key from env, falling back to this process's environment.
func getenv(env []string, key string) string {
	v := os.Getenv(key)
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// cwdNames are a directory's spellings: as given and with symlinks
// resolved (the CLIs record the resolved one).
func cwdNames(dir string) []string {
	names := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		names = append(names, real)
	}
	return names
}

// claude: <config dir>/projects/<cwd with every non-alphanumeric
// character as '-'>/<session>.jsonl, subagents under <session>/subagents.
type claude struct{ dirs []string }

func newClaude(opt Options) *claude {
	cfg := getenv(opt.Env, "CLAUDE_CONFIG_DIR")
	if cfg == "" {
		cfg = filepath.Join(getenv(opt.Env, "HOME"), ".claude")
	}
	c := &claude{}
	for _, n := range cwdNames(opt.Dir) {
		c.dirs = append(c.dirs, filepath.Join(cfg, "projects", ProjectDirName(n)))
	}
	return c
}

// ProjectDirName is how Claude Code names a working directory's folder.
func ProjectDirName(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

func (c *claude) watchDirs() []string {
	var out []string
	for _, d := range c.dirs {
		out = append(out, d)
		sessions, _ := filepath.Glob(filepath.Join(d, "*"))
		subs, _ := filepath.Glob(filepath.Join(d, "*", "subagents"))
		for _, s := range append(sessions, subs...) {
			if st, err := os.Stat(s); err == nil && st.IsDir() {
				out = append(out, s)
			}
		}
	}
	return out
}

func (c *claude) candidates() map[string]bool {
	out := map[string]bool{}
	for _, d := range c.dirs {
		main, _ := filepath.Glob(filepath.Join(d, "*.jsonl"))
		for _, f := range main {
			out[f] = true
		}
		// Subagents (the Task tool) count for usage; their words are not
		// the agent's answer.
		sub, _ := filepath.Glob(filepath.Join(d, "*", "subagents", "*.jsonl"))
		for _, f := range sub {
			out[f] = false
		}
	}
	return out
}

func (c *claude) belongs([]byte) (bool, bool) { return true, true } // the folder is the cwd's

func (c *claude) relevant(line []byte) bool { return bytes.Contains(line, []byte(`"assistant"`)) }

func (c *claude) parser() lineParser { return &signal.ClaudeTranscriptParser{} }

// codex: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, shared by every
// directory; a file is this agent's when its session_meta names its cwd.
type codex struct {
	sessions string
	since    time.Time
	cwds     []string
}

func newCodex(opt Options) *codex {
	home := getenv(opt.Env, "CODEX_HOME")
	if home == "" {
		home = filepath.Join(getenv(opt.Env, "HOME"), ".codex")
	}
	return &codex{sessions: filepath.Join(home, "sessions"), since: opt.Since, cwds: cwdNames(opt.Dir)}
}

// dayDirs are the date folders a session started since the agent may be
// in: from the day before its start to the day after now, in local time
// and UTC, whichever Codex uses.
func (c *codex) dayDirs() []string {
	seen := map[string]bool{}
	var out []string
	end := time.Now().Add(24 * time.Hour)
	for t := c.since.Add(-24 * time.Hour); !t.After(end); t = t.Add(12 * time.Hour) {
		for _, tt := range []time.Time{t.Local(), t.UTC()} {
			d := filepath.Join(c.sessions, tt.Format("2006"), tt.Format("01"), tt.Format("02"))
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

func (c *codex) watchDirs() []string { return c.dayDirs() }

func (c *codex) candidates() map[string]bool {
	out := map[string]bool{}
	for _, d := range c.dayDirs() {
		files, _ := filepath.Glob(filepath.Join(d, "rollout-*.jsonl"))
		for _, f := range files {
			out[f] = true
		}
	}
	return out
}

func (c *codex) belongs(first []byte) (bool, bool) {
	var l struct {
		Type    string `json:"type"`
		Payload struct {
			Cwd string `json:"cwd"`
		} `json:"payload"`
	}
	if json.Unmarshal(first, &l) != nil || l.Type != "session_meta" {
		return false, true
	}
	for _, n := range c.cwds {
		if filepath.Clean(l.Payload.Cwd) == n {
			return true, true
		}
	}
	return false, true
}

func (c *codex) relevant(line []byte) bool {
	for _, k := range codexKinds {
		if bytes.Contains(line, k) {
			return true
		}
	}
	return false
}

// codexKinds mark the rollout lines the parser reads: messages and tool
// calls, usage, and a turn's start, end or abort.
var codexKinds = [][]byte{[]byte(`"response_item"`), []byte(`"token_count"`), []byte(`"session_meta"`),
	[]byte(`"task_started"`), []byte(`"task_complete"`), []byte(`"turn_aborted"`)}

func (c *codex) parser() lineParser { return &signal.CodexRolloutParser{} }
