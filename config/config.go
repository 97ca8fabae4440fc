// Package config owns .chorus/config.json: the typed configuration, its
// defaults, the layering (defaults < user file < project file < CHORUS_*
// environment) and validation. No viper: see layers.go for why.
package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Version is the config format version written by init.
const Version = "3.2"

// Mode values.
const (
	ModeSemiAuto  = "semi-auto"
	ModeAutopilot = "autopilot"
)

// Modes lists the allowed values of Config.Mode.
var Modes = []string{ModeSemiAuto, ModeAutopilot}

// Config is the whole of .chorus/config.json.
type Config struct {
	Version         string           `json:"version"`
	Project         Project          `json:"project"`
	QualityCommands []QualityCommand `json:"qualityCommands"`
	Mode            string           `json:"mode"`
	Agents          Agents           `json:"agents"`
	Completion      Completion       `json:"completion"`
	Merge           Merge            `json:"merge"`
	Worktree        Worktree         `json:"worktree"`
	TUI             TUI              `json:"tui"`
	Checkpoints     Checkpoints      `json:"checkpoints"`
	Budget          Budget           `json:"budget"`
	Planning        Planning         `json:"planning"`
	Hooks           Hooks            `json:"hooks"`
	Notify          Notify           `json:"notify"`
	Team            Team             `json:"team"`
	Runner          Runner           `json:"runner,omitzero"`
	CreatedAt       string           `json:"createdAt,omitempty"`
	UpdatedAt       string           `json:"updatedAt,omitempty"`
}

// Planning configures the planning phase (`chorus plan`).
type Planning struct {
	// MaxReviewIterations bounds the review loop: validate, hand the
	// violations to the Plan Agent, again.
	MaxReviewIterations int `json:"maxReviewIterations"`
	// TimeoutMinutes bounds one Plan Agent turn (0: no limit).
	TimeoutMinutes int `json:"timeoutMinutes"`
}

// Team configures several Chorus instances working one task queue (bd on
// a shared Dolt server): each leaves a heartbeat in the task store.
type Team struct {
	// HeartbeatSeconds is how often this instance writes its heartbeat.
	HeartbeatSeconds int `json:"heartbeatSeconds"`
	// DeadAfterSeconds: another instance whose heartbeat is this old is
	// taken for dead, and its claims are released for others to take.
	DeadAfterSeconds int `json:"deadAfterSeconds"`
}

// Notify sends notifications that reach a person away from the screen
// (a phone, a chat) when a task needs a person or fails, autopilot pauses
// or resumes, and a run finishes. Empty URLs send nothing.
type Notify struct {
	// Webhook receives each notification as a JSON POST.
	Webhook string `json:"webhook"`
	// Ntfy is an ntfy topic URL (https://ntfy.sh/my-topic or a server of
	// your own; https://user:token@host/topic for a protected one): the
	// text as the body, Title, Priority and Tags as headers.
	Ntfy string `json:"ntfy"`
}

// Hooks configures the executables in .chorus/hooks/.
type Hooks struct {
	// TimeoutSeconds bounds one hook run; past it the hook's whole process
	// group is killed and the hook counts as continue.
	TimeoutSeconds int `json:"timeoutSeconds"`
}

// Project describes the repository Chorus works on.
type Project struct {
	Name         string `json:"name"`
	Type         string `json:"type"`
	TaskIDPrefix string `json:"taskIdPrefix"`
}

// QualityCommand is one of the user's own shell commands that gate
// completion and merges.
type QualityCommand struct {
	Name           string `json:"name"`
	Command        string `json:"command"`
	Required       bool   `json:"required"`
	Order          int    `json:"order"`
	TimeoutMinutes int    `json:"timeoutMinutes,omitempty"`
}

// Timeout is the command's limit (10 minutes when unset).
func (q QualityCommand) Timeout() time.Duration {
	if q.TimeoutMinutes <= 0 {
		return 10 * time.Minute
	}
	return time.Duration(q.TimeoutMinutes) * time.Minute
}

// Agents configures which agent CLIs run and how many at once.
type Agents struct {
	Default        string `json:"default"`
	MaxParallel    int    `json:"maxParallel"`
	TimeoutMinutes int    `json:"timeoutMinutes"`
	// Scrollback is how many rows of history each agent's terminal keeps
	// (in the engine and in an attached TUI), as tmux's history-limit.
	Scrollback int                     `json:"scrollback"`
	Available  map[string]AgentProfile `json:"available"`
	// Host runs each agent in an agent host process (`chorus agent-host`)
	// that outlives the engine, and re-adopts live hosts at start. On by
	// default: the host hands the agent's terminal to the engine, which
	// reads it as its own, so it costs about what a direct agent does
	// (scripts/bench-grid.sh with HOST=1). False runs agents as the
	// engine's own children, ended with it.
	Host bool `json:"host"`
	// HostOrphanSeconds is how long a host waits for its engine to come
	// back before it stops its agent (0: 600).
	HostOrphanSeconds int `json:"hostOrphanSeconds,omitempty"`
}

// Scrollback bounds: the default is what a tmux user typically sets; the
// least keeps rows long enough for the engine to read the signals in
// them; the most keeps a busy agent's terminal within tens of megabytes.
const (
	DefaultScrollback = 10000
	MinScrollback     = 1000
	MaxScrollback     = 1000000
)

// Prompt delivery for an agent profile.
const (
	PromptArg   = "arg"   // last argv element
	PromptStdin = "stdin" // written to stdin, then closed (headless)
	PromptType  = "type"  // typed into the live terminal after start
)

// Output formats a headless profile emits.
const (
	FormatTerminal   = ""                   // plain terminal output
	FormatClaudeJSON = "claude-stream-json" // claude -p --output-format stream-json
	FormatCodexJSON  = "codex-json"         // codex exec --json
	FormatOpenCode   = "opencode-json"      // opencode run --format json
)

// Session records an interactive profile's structured signals and usage
// are read from (AgentProfile.Transcript).
const (
	TranscriptClaude = "claude" // ~/.claude/projects/<cwd>/<session>.jsonl
	TranscriptCodex  = "codex"  // $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl
	TranscriptNone   = "none"   // terminal text only
)

// AgentProfile says how to start one agent CLI.
type AgentProfile struct {
	Command            string   `json:"command"`
	Args               []string `json:"args"`
	Prompt             string   `json:"prompt,omitempty"`
	ModelFlag          string   `json:"modelFlag,omitempty"`
	AllowModelOverride bool     `json:"allowModelOverride"`
	// Env holds KEY=VALUE pairs added to the agent's environment (a list,
	// not an object, so key case survives the loader).
	Env []string `json:"env,omitempty"`
	// ExitInput is typed to ask an interactive agent to quit (e.g. "/exit");
	// empty means end it with SIGTERM.
	ExitInput string `json:"exitInput,omitempty"`
	Format    string `json:"format,omitempty"`
	// Transcript says which session records an interactive (terminal)
	// profile writes: "claude", "codex", or "none". Empty means: from the
	// command's name. With a transcript, signals are read from the
	// assistant's messages there and the terminal's text does not count.
	Transcript string `json:"transcript,omitempty"`
	// InjectContext adds AGENTS.md to the prompt, for CLIs that do not read
	// project context themselves (PATTERNS.md and the learnings reach
	// every profile).
	InjectContext bool `json:"injectContext"`
	// TrustWorktrees: before an interactive Claude Code agent starts, its
	// worktree (exactly that path) is marked trusted in Claude Code's config,
	// so its first-run trust dialog, whose default answer exits, is not shown.
	// Without it, worktrees inherit the trust the user gave the repository
	// itself in Claude Code; a repository never trusted is reported once per
	// run, and autopilot starts no such agent.
	// An interactive Codex agent is told on its command line instead (-c
	// projects=…, the worktree and the repository, for that run only).
	TrustWorktrees bool `json:"trustWorktrees,omitempty"`
}

// TranscriptKind is the session record an interactive profile's signals
// and usage are read from: TranscriptClaude, TranscriptCodex, or "" for
// none (headless profiles, custom agents). Unset, it follows the
// command's base name (claude…, codex…).
func (p AgentProfile) TranscriptKind() string {
	if p.Format != FormatTerminal {
		return ""
	}
	switch p.Transcript {
	case TranscriptNone:
		return ""
	case TranscriptClaude, TranscriptCodex:
		return p.Transcript
	}
	base := strings.ToLower(filepath.Base(p.Command))
	switch {
	case strings.HasPrefix(base, "claude"):
		return TranscriptClaude
	case strings.HasPrefix(base, "codex"):
		return TranscriptCodex
	}
	return ""
}

// Completion configures when a task counts as done.
type Completion struct {
	Signal        string `json:"signal"`
	MaxIterations int    `json:"maxIterations"`
	// TaskTimeout is in minutes, like every duration in this file.
	TaskTimeout     int `json:"taskTimeout"`
	StuckIterations int `json:"stuckIterations"`
	// RepeatedFailures: a required quality command failing with the same
	// output this many checks in a row hands the task to a person
	// (blocked, with the failure as evidence); 0 turns it off.
	RepeatedFailures int `json:"repeatedFailures"`
	// StuckAlerts: this many stuckIterations alerts in a row (no commit in
	// between) hand the task to a person; 0 turns it off.
	StuckAlerts int `json:"stuckAlerts"`
	// MaxNudges bounds the questions Chorus asks a task's agent whose turn
	// ended on a tag that did not count, or idle with no signal ("run
	// chorus signal COMPLETE if done, or keep working"); past it the task
	// goes to a person with the evidence. 0 means the default, 3.
	MaxNudges        int `json:"maxNudges"`
	MaxAgentErrors   int `json:"maxConsecutiveErrors"`
	StopGraceSeconds int `json:"stopGraceSeconds"`
	// ShutdownGraceSeconds bounds the whole shutdown after SIGINT or
	// SIGTERM (agents stopped, work committed, tasks released); past it
	// Chorus exits anyway and the next start recovers, as after a crash.
	ShutdownGraceSeconds int `json:"shutdownGraceSeconds"`
}

// Merge configures the background merge service.
type Merge struct {
	// TargetBranch is where agents' work lands. init records it; empty,
	// the next start records the branch checked out then. It never follows
	// a later checkout.
	TargetBranch    string `json:"targetBranch"`
	AutoResolve     bool   `json:"autoResolve"`
	AgentResolve    bool   `json:"agentResolve"`
	RequireApproval bool   `json:"requireApproval"`
	MaxAttempts     int    `json:"maxAttempts"`
	// LockfileCommand regenerates lock files after a conflict in them.
	LockfileCommand string `json:"lockfileCommand,omitempty"`
	// ResolverTimeoutMinutes bounds one conflict-resolver agent; when it
	// passes, the resolver's work is kept under refs/chorus/ and the
	// conflict goes to a person. Shorter than agents.timeoutMinutes: a
	// resolver has one small job.
	ResolverTimeoutMinutes int `json:"resolverTimeoutMinutes"`
	// Remote, when set (e.g. "origin"), is where a team's instances meet:
	// candidates are built on its target's tip and land by a push that
	// succeeds only if that tip has not moved.
	Remote string `json:"remote,omitempty"`
	// PushBranches, with Remote, pushes each agent's branch there after
	// every iteration, so teammates see the work in progress.
	PushBranches bool `json:"pushBranches,omitempty"`
}

// ResolverTimeout is ResolverTimeoutMinutes as a duration.
func (m Merge) ResolverTimeout() time.Duration {
	return time.Duration(m.ResolverTimeoutMinutes) * time.Minute
}

// Worktree configures agent worktrees.
type Worktree struct {
	Copy  []string `json:"copy"`
	Setup []string `json:"setup"`
}

// TUI configures the full-screen interface.
type TUI struct {
	AgentGrid string `json:"agentGrid"`
	PrefixKey string `json:"prefixKey"`
	// Notify sends a desktop notification (notify-send, or OSC 777/9 to
	// the terminal) when an agent needs a person or autopilot has
	// finished, for whoever is not watching. Off by default.
	Notify bool `json:"notify"`
}

// Checkpoints configures automatic git checkpoints.
type Checkpoints struct {
	Enabled         bool `json:"enabled"`
	BeforeAutopilot bool `json:"beforeAutopilot"`
	BeforeMerge     bool `json:"beforeMerge"`
	Periodic        int  `json:"periodic"`
}

// Budget caps spending; zero means no cap.
type Budget struct {
	TaskTokens     int64   `json:"taskTokens"`
	TaskDollars    float64 `json:"taskDollars"`
	TaskMinutes    int     `json:"taskMinutes"`
	SessionTokens  int64   `json:"sessionTokens"`
	SessionDollars float64 `json:"sessionDollars"`
	SessionMinutes int     `json:"sessionMinutes"`
	// OnExceeded: "continue" (other tasks go on) or "stop" (autopilot stops).
	OnExceeded string `json:"onExceeded"`
}

// BuiltinAgents are the profiles every config starts with.
func BuiltinAgents() map[string]AgentProfile {
	return map[string]AgentProfile{
		"claude": {
			Command: "claude", Args: []string{"--dangerously-skip-permissions"},
			Prompt: PromptArg, ModelFlag: "--model", AllowModelOverride: true, ExitInput: "/exit",
		},
		"claude-headless": {
			Command: "claude", Args: []string{"--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose", "-p"},
			Prompt: PromptArg, ModelFlag: "--model", AllowModelOverride: true, Format: FormatClaudeJSON,
		},
		"codex": {
			Command: "codex", Args: []string{"--dangerously-bypass-approvals-and-sandbox"},
			Prompt: PromptArg, ModelFlag: "-m", AllowModelOverride: true, ExitInput: "/quit", InjectContext: true,
		},
		"codex-headless": {
			Command: "codex", Args: []string{"exec", "--json", "--dangerously-bypass-approvals-and-sandbox"},
			Prompt: PromptArg, ModelFlag: "-m", AllowModelOverride: true, Format: FormatCodexJSON, InjectContext: true,
		},
		"opencode": {
			Command: "opencode", Args: []string{"run", "--format", "json"},
			Prompt: PromptArg, ModelFlag: "-m", AllowModelOverride: true, InjectContext: true, Format: FormatOpenCode,
			Env: []string{`OPENCODE_PERMISSION={"*":"allow"}`},
		},
	}
}

// Default returns the configuration used where a file says nothing.
func Default() Config {
	return Config{
		Version:         Version,
		Project:         Project{TaskIDPrefix: "ch"},
		QualityCommands: []QualityCommand{},
		Mode:            ModeSemiAuto,
		Agents: Agents{
			Default: "claude", MaxParallel: 3, TimeoutMinutes: 30, Scrollback: DefaultScrollback, Host: true,
			Available: BuiltinAgents(),
		},
		Completion: Completion{
			Signal: "<chorus>COMPLETE</chorus>", MaxIterations: 50, TaskTimeout: 30,
			StuckIterations: 5, RepeatedFailures: 3, StuckAlerts: 2, MaxNudges: 3, MaxAgentErrors: 3, StopGraceSeconds: 10, ShutdownGraceSeconds: 60,
		},
		Merge:       Merge{TargetBranch: "", AutoResolve: true, AgentResolve: true, MaxAttempts: 3, ResolverTimeoutMinutes: 10},
		Worktree:    Worktree{Copy: []string{}, Setup: []string{}},
		TUI:         TUI{AgentGrid: "auto", PrefixKey: `Ctrl-\`},
		Checkpoints: Checkpoints{Enabled: true, BeforeAutopilot: true, BeforeMerge: true, Periodic: 5},
		Budget:      Budget{OnExceeded: "continue"},
		Planning:    Planning{MaxReviewIterations: 3, TimeoutMinutes: 30},
		Hooks:       Hooks{TimeoutSeconds: 30},
		Team:        Team{HeartbeatSeconds: 15, DeadAfterSeconds: 120},
	}
}

// SortedQuality returns the quality commands in execution order.
func (c Config) SortedQuality() []QualityCommand {
	q := append([]QualityCommand(nil), c.QualityCommands...)
	sort.SliceStable(q, func(i, j int) bool { return q[i].Order < q[j].Order })
	return q
}

// Profile returns the named agent profile.
func (c Config) Profile(name string) (AgentProfile, bool) {
	p, ok := c.Agents.Available[strings.ToLower(name)]
	return p, ok
}

// AgentNames lists the configured profiles, sorted.
func (c Config) AgentNames() []string {
	names := make([]string, 0, len(c.Agents.Available))
	for n := range c.Agents.Available {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FieldError is one invalid setting: which field, what value, what is allowed.
type FieldError struct {
	Field   string
	Value   any
	Allowed string
}

func (e FieldError) Error() string {
	return fmt.Sprintf("%s: %v is not valid; allowed: %s", e.Field, quote(e.Value), e.Allowed)
}

func quote(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// ValidationError lists every invalid field at once, so the user fixes the
// file in one pass.
type ValidationError struct {
	File   string
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.File != "" {
		fmt.Fprintf(&b, "%s: ", e.File)
	}
	fmt.Fprintf(&b, "invalid configuration (%d problem", len(e.Fields))
	if len(e.Fields) != 1 {
		b.WriteString("s")
	}
	b.WriteString(")")
	for _, f := range e.Fields {
		b.WriteString("\n  - ")
		b.WriteString(f.Error())
	}
	return b.String()
}

// Compiled on first use: package init runs on every CLI start.
var (
	prefixRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_]*-?$`) })
	gridRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[1-9]x[1-9]$`) })
	keyRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(Ctrl|Alt)-[A-Za-z\\\]]$`) })
	nameRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
)

// Validate checks every field and returns a *ValidationError naming each bad
// one, or nil.
func (c Config) Validate() error {
	var errs []FieldError
	add := func(field string, v any, allowed string) {
		errs = append(errs, FieldError{Field: field, Value: v, Allowed: allowed})
	}
	if c.Mode != ModeSemiAuto && c.Mode != ModeAutopilot {
		add("mode", c.Mode, strings.Join(Modes, ", "))
	}
	if c.Project.TaskIDPrefix != "" && !prefixRE().MatchString(c.Project.TaskIDPrefix) {
		add("project.taskIdPrefix", c.Project.TaskIDPrefix, "lower-case letters, digits and _, e.g. \"ch\"")
	}
	if c.Agents.MaxParallel < 1 || c.Agents.MaxParallel > 32 {
		add("agents.maxParallel", c.Agents.MaxParallel, "an integer from 1 to 32")
	}
	if c.Agents.TimeoutMinutes < 0 {
		add("agents.timeoutMinutes", c.Agents.TimeoutMinutes, "minutes, 0 (no limit) or more")
	}
	if c.Agents.HostOrphanSeconds < 0 {
		add("agents.hostOrphanSeconds", c.Agents.HostOrphanSeconds, "seconds an agent host waits for its engine, 0 or more (0: 600)")
	}
	if c.Agents.Scrollback < MinScrollback || c.Agents.Scrollback > MaxScrollback {
		add("agents.scrollback", c.Agents.Scrollback, fmt.Sprintf("rows of history per agent terminal, from %d to %d (%d by default)", MinScrollback, MaxScrollback, DefaultScrollback))
	}
	if len(c.Agents.Available) == 0 {
		add("agents.available", "{}", "at least one agent profile")
	}
	if _, ok := c.Agents.Available[c.Agents.Default]; !ok {
		add("agents.default", c.Agents.Default, "one of agents.available: "+strings.Join(c.AgentNames(), ", "))
	}
	for _, n := range c.AgentNames() {
		p := c.Agents.Available[n]
		f := "agents.available." + n
		if !nameRE().MatchString(n) {
			add(f, n, "a name of lower-case letters, digits, '.', '_' and '-'")
		}
		if strings.TrimSpace(p.Command) == "" {
			add(f+".command", p.Command, "the agent's executable, e.g. \"claude\"")
		}
		for _, kv := range p.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				add(f+".env", kv, "KEY=VALUE strings")
			}
		}
		switch p.Prompt {
		case "", PromptArg, PromptStdin, PromptType:
		default:
			add(f+".prompt", p.Prompt, "arg, stdin, type")
		}
		switch p.Format {
		case FormatTerminal, FormatClaudeJSON, FormatCodexJSON, FormatOpenCode:
		default:
			add(f+".format", p.Format, `"" (terminal), claude-stream-json, codex-json, opencode-json`)
		}
		switch p.Transcript {
		case "", TranscriptClaude, TranscriptCodex, TranscriptNone:
		default:
			add(f+".transcript", p.Transcript, `"" (from the command), claude, codex, none`)
		}
		if base := filepath.Base(p.Command); p.TrustWorktrees && (p.Format != FormatTerminal || !strings.HasPrefix(base, "claude") && !strings.HasPrefix(base, "codex")) {
			add(f+".trustWorktrees", true, "only for an interactive Claude Code or Codex agent (command claude or codex, format \"\"), the ones that ask to trust a folder; remove it here")
		}
	}
	seen := map[string]bool{}
	for i, q := range c.QualityCommands {
		f := fmt.Sprintf("qualityCommands[%d]", i)
		if strings.TrimSpace(q.Name) == "" {
			add(f+".name", q.Name, "a non-empty name")
		} else if seen[q.Name] {
			add(f+".name", q.Name, "a name not used by another quality command")
		}
		seen[q.Name] = true
		if strings.TrimSpace(q.Command) == "" {
			add(f+".command", q.Command, "a shell command")
		}
		if q.TimeoutMinutes < 0 {
			add(f+".timeoutMinutes", q.TimeoutMinutes, "minutes, 0 (default 10) or more")
		}
	}
	if c.Completion.MaxIterations < 1 {
		add("completion.maxIterations", c.Completion.MaxIterations, "an integer of 1 or more")
	}
	if c.Completion.TaskTimeout < 0 {
		add("completion.taskTimeout", c.Completion.TaskTimeout, "minutes, 0 (no limit) or more")
	}
	if c.Completion.StuckIterations < 0 {
		add("completion.stuckIterations", c.Completion.StuckIterations, "0 (off) or more")
	}
	if c.Completion.RepeatedFailures < 0 {
		add("completion.repeatedFailures", c.Completion.RepeatedFailures, "0 (off) or more: the same quality failure this many times in a row goes to a person")
	}
	if c.Completion.MaxNudges < 0 {
		add("completion.maxNudges", c.Completion.MaxNudges, "0 (the default, 3) or more: questions asked of an agent whose turn ended without a signal that counts, before its task goes to a person")
	}
	if c.Completion.StuckAlerts < 0 {
		add("completion.stuckAlerts", c.Completion.StuckAlerts, "0 (off) or more: this many stuck alerts in a row go to a person")
	}
	if c.Completion.MaxAgentErrors < 0 {
		add("completion.maxConsecutiveErrors", c.Completion.MaxAgentErrors, "0 (off) or more")
	}
	if c.Completion.StopGraceSeconds < 0 {
		add("completion.stopGraceSeconds", c.Completion.StopGraceSeconds, "seconds, 0 or more")
	}
	if c.Completion.ShutdownGraceSeconds <= c.Completion.StopGraceSeconds {
		add("completion.shutdownGraceSeconds", c.Completion.ShutdownGraceSeconds, "seconds, more than completion.stopGraceSeconds (agents get that long to stop, then work is committed and tasks released)")
	}
	if c.Team.HeartbeatSeconds < 1 {
		add("team.heartbeatSeconds", c.Team.HeartbeatSeconds, "seconds, 1 or more (default 15)")
	}
	if c.Team.DeadAfterSeconds < 2*c.Team.HeartbeatSeconds {
		add("team.deadAfterSeconds", c.Team.DeadAfterSeconds, "seconds, at least twice team.heartbeatSeconds (default 120), so one late heartbeat is no death")
	}
	if c.Merge.MaxAttempts < 1 {
		add("merge.maxAttempts", c.Merge.MaxAttempts, "an integer of 1 or more")
	}
	if c.Merge.ResolverTimeoutMinutes < 1 {
		add("merge.resolverTimeoutMinutes", c.Merge.ResolverTimeoutMinutes, "minutes, 1 or more (default 10)")
	}
	if b := c.Merge.TargetBranch; b != "" && (strings.HasPrefix(b, "-") || strings.ContainsAny(b, " ~^:?*[\\") || strings.Contains(b, "..")) {
		add("merge.targetBranch", b, "a valid git branch name, or \"\" to record the branch checked out at the next start")
	}
	if r := c.Merge.Remote; r != "" && (strings.HasPrefix(r, "-") || strings.ContainsAny(r, " \t\n:")) {
		add("merge.remote", r, "the name of a git remote (git remote -v lists them), or \"\" for none")
	}
	if g := c.TUI.AgentGrid; g != "auto" && !gridRE().MatchString(g) {
		add("tui.agentGrid", g, `"auto" or COLSxROWS such as "2x2", "1x4"`)
	}
	if k := c.TUI.PrefixKey; !keyRE().MatchString(k) {
		add("tui.prefixKey", k, `Ctrl-<letter>, Ctrl-\, Ctrl-] or Alt-<letter>, e.g. "Ctrl-\\" (JSON escapes the backslash)`)
	}
	if c.Checkpoints.Periodic < 0 {
		add("checkpoints.periodic", c.Checkpoints.Periodic, "0 (off) or a number of merges")
	}
	if c.Budget.OnExceeded != "continue" && c.Budget.OnExceeded != "stop" {
		add("budget.onExceeded", c.Budget.OnExceeded, "continue, stop")
	}
	if c.Budget.TaskTokens < 0 || c.Budget.SessionTokens < 0 || c.Budget.TaskDollars < 0 ||
		c.Budget.SessionDollars < 0 || c.Budget.TaskMinutes < 0 || c.Budget.SessionMinutes < 0 {
		add("budget", "a negative cap", "0 (no cap) or more")
	}
	if c.Planning.MaxReviewIterations < 0 || c.Planning.MaxReviewIterations > 20 {
		add("planning.maxReviewIterations", c.Planning.MaxReviewIterations, "an integer from 0 (validate only) to 20")
	}
	if c.Planning.TimeoutMinutes < 0 {
		add("planning.timeoutMinutes", c.Planning.TimeoutMinutes, "minutes, 0 (no limit) or more")
	}
	for _, n := range []struct{ field, v string }{{"notify.webhook", c.Notify.Webhook}, {"notify.ntfy", c.Notify.Ntfy}} {
		if n.v != "" && !httpURL(n.v) {
			add(n.field, n.v, "an http:// or https:// URL with a host, e.g. \"https://ntfy.sh/my-topic\", or \"\" for none")
		}
	}
	if c.Hooks.TimeoutSeconds < 1 || c.Hooks.TimeoutSeconds > 3600 {
		add("hooks.timeoutSeconds", c.Hooks.TimeoutSeconds, "seconds, from 1 to 3600 (a hook past it is killed and counts as continue)")
	}
	c.Runner.validate(add, c.Merge.Remote)
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Fields: errs}
}

// httpURL says s is an absolute http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
