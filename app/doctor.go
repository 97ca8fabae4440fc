package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/chorus-dev/chorus/agent/claudetrust"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

// Finding levels for doctor.
const (
	levelOK   = "ok"
	levelWarn = "warn"
	levelFail = "fail"
)

type finding struct {
	Check  string `json:"check"`
	Level  string `json:"level"`
	Detail string `json:"detail"`
}

type doctorReport struct {
	OK       bool      `json:"ok"`
	Root     string    `json:"root,omitempty"`
	Findings []finding `json:"checks"`
}

func (r *doctorReport) add(check, level, format string, a ...any) {
	r.Findings = append(r.Findings, finding{Check: check, Level: level, Detail: fmt.Sprintf(format, a...)})
	if level == levelFail {
		r.OK = false
	}
}

func newDoctorCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check this repository's Chorus setup without changing anything",
		Long: `Read-only health check: the git repository and git version, the files in
.chorus/ (present and parseable), the configuration, the task store, the agent
CLIs, and stale locks. One line per check; exits 1 when something is wrong.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := diagnose(cmd.Context(), g)
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), r); err != nil {
					return err
				}
			} else {
				printFindings(cmd.OutOrStdout(), r)
			}
			if !r.OK {
				return withCode(ExitFailure, errors.New("doctor found problems (lines marked ✗)"))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printFindings(w io.Writer, r doctorReport) {
	for _, f := range r.Findings {
		mark := map[string]string{levelOK: "✓", levelWarn: "!", levelFail: "✗"}[f.Level]
		fmt.Fprintf(w, "%s %-22s %s\n", mark, f.Check, f.Detail)
	}
}

func diagnose(ctx context.Context, g *globals) doctorReport {
	r := doctorReport{OK: true}
	wd, err := g.workDir()
	if err != nil {
		r.add("git repository", levelFail, "%v", err)
		return r
	}
	if err := gitx.LookGit(); err != nil {
		r.add("git", levelFail, "%v", err)
		return r
	}
	root, err := gitx.MainRoot(ctx, wd)
	if err != nil {
		if errors.Is(err, gitx.ErrNotRepo) || strings.Contains(err.Error(), "not a git repository") {
			r.add("git repository", levelFail, "%s is not inside a git repository; run `git init`", wd)
		} else {
			r.add("git repository", levelFail, "%v", err)
		}
		return r
	}
	r.Root = root
	r.add("git repository", levelOK, "%s", root)
	if v, nums, err := gitx.Version(ctx); err != nil {
		r.add("git version", levelFail, "%v", err)
	} else if !gitx.AtLeast(nums, gitx.MinVersion) {
		r.add("git version", levelFail, "git %s; merges need 2.38 or newer", v)
	} else {
		r.add("git version", levelOK, "git %s", v)
	}
	d := chorusdir.At(root)
	cfg := config.Default()
	if !d.Exists() {
		r.add(".chorus/", levelFail, "missing; run `chorus init`")
	} else {
		r.add(".chorus/", levelOK, "%s", d.Path)
		cfgPath := g.configPath
		if cfgPath == "" {
			cfgPath = d.Config()
		}
		l, err := config.Load(cfgPath)
		switch {
		case err != nil:
			r.add("config", levelFail, "%s", oneLine(err))
		default:
			cfg = l.Config
			r.add("config", levelOK, "%s valid (mode %s, up to %d agents, %d quality commands)", rel(root, cfgPath), cfg.Mode, cfg.Agents.MaxParallel, len(cfg.QualityCommands))
			for _, w := range l.Warnings {
				r.add("config", levelWarn, "%s", w)
			}
			if len(cfg.QualityCommands) == 0 {
				r.add("quality commands", levelWarn, "none configured: finished work merges unchecked; add qualityCommands to %s", rel(root, cfgPath))
			}
		}
		for _, f := range []struct {
			path     string
			json     bool
			required bool
		}{
			{d.PlanningState(), true, true},
			{d.State(), true, false},
			{filepath.Join(d.Prompts(), "impl-agent.md"), false, true},
			{filepath.Join(d.Prompts(), "plan-agent.md"), false, true},
			{d.TaskRules(), false, true},
			{d.Patterns(), false, true},
		} {
			checkFile(&r, root, f.path, f.json, f.required)
		}
		checkLock(&r, d)
	}
	checkTasks(ctx, &r, root, cfg)
	checkRunner(ctx, &r, cfg, d, g.version)
	checkAgents(&r, cfg)
	checkClaudeTrust(&r, cfg, root)
	return r
}

func checkFile(r *doctorReport, root, path string, isJSON, required bool) {
	name := rel(root, path)
	_, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && !required:
		return
	case errors.Is(err, os.ErrNotExist):
		r.add(name, levelWarn, "missing; `chorus init` recreates it without touching other files")
		return
	case err != nil:
		r.add(name, levelFail, "%v", err)
		return
	}
	if isJSON {
		if _, err := config.ReadJSONObject(path); err != nil {
			r.add(name, levelFail, "%s", oneLine(err))
			return
		}
	}
	r.add(name, levelOK, "present")
}

func checkLock(r *doctorReport, d chorusdir.Dir) {
	st, err := d.InspectLock()
	switch {
	case err != nil:
		r.add("lock", levelWarn, "%v", err)
	case st.Held:
		r.add("lock", levelOK, "held by a running Chorus (pid %d on %s)", st.Holder.PID, st.Holder.Host)
	case st.Stale():
		r.add("lock", levelWarn, "stale lock from pid %d (not running); the next start takes it over, or delete %s", st.Holder.PID, d.Lock())
	default:
		r.add("lock", levelOK, "no Chorus running")
	}
}

func checkTasks(ctx context.Context, r *doctorReport, root string, cfg config.Config) {
	info, err := beads.DetectBackend(root, "")
	if err != nil {
		r.add("task store", levelFail, "%s", oneLine(err))
		return
	}
	s, err := beads.Open(ctx, beads.OpenOptions{RepoDir: root, Prefix: cfg.Project.TaskIDPrefix, Actor: actor()})
	if err != nil {
		r.add("task store", levelFail, "%s", oneLine(err))
		return
	}
	if c, ok := s.(interface{ Shutdown() }); ok {
		defer c.Shutdown()
	}
	ts, err := s.List(ctx)
	if errors.Is(err, beads.ErrCorrupt) {
		r.add("task store", levelFail, "%s", bdRebuild(root, info.BeadsDir, err, time.Now()))
		return
	}
	if err != nil {
		r.add("task store", levelFail, "%s: %s", info.Name, oneLine(err))
		return
	}
	if l, ok := s.(interface{ LoadError() error }); ok {
		if err := l.LoadError(); err != nil {
			r.add("task store", levelFail, "%s", oneLine(err))
			return
		}
	}
	r.add("task store", levelOK, "%s backend, %d tasks (%s)", info.Name, len(ts), info.Reason)
	checkTaskRules(r, root, ts)
}

func checkAgents(r *doctorReport, cfg config.Config) {
	for _, n := range cfg.AgentNames() {
		p := cfg.Agents.Available[n]
		_, err := exec.LookPath(p.Command)
		switch {
		case err == nil:
			r.add("agent "+n, levelOK, "%s found", p.Command)
		case n == cfg.Agents.Default:
			r.add("agent "+n, levelFail, "%s not found on PATH, and it is agents.default; install it or set agents.default to an agent you have", p.Command)
		default:
			r.add("agent "+n, levelWarn, "%s not found on PATH (tasks that ask for %s cannot start)", p.Command, n)
		}
	}
}

// checkClaudeTrust warns about interactive Claude Code agents that would
// stop at Claude Code's trust dialog in every new worktree.
func checkClaudeTrust(r *doctorReport, cfg config.Config, root string) {
	for _, n := range cfg.AgentNames() {
		p := cfg.Agents.Available[n]
		switch msg := claudetrust.Problem(n, p, root); {
		case msg != "":
			r.add("agent "+n+" trust", levelWarn, "%s", msg)
		case p.TranscriptKind() == config.TranscriptClaude && p.TrustWorktrees:
			r.add("agent "+n+" trust", levelOK, "worktrees trusted in Claude Code (trustWorktrees)")
		case p.TranscriptKind() == config.TranscriptClaude:
			r.add("agent "+n+" trust", levelOK, "%s is trusted in Claude Code; its worktrees are trusted for each run", root)
		}
	}
}

// defaultAgentMissing is doctor's verdict on the default agent's command
// when it cannot be found, or "".
func defaultAgentMissing(cfg config.Config) string {
	var r doctorReport
	checkAgents(&r, cfg)
	for _, f := range r.Findings {
		if f.Level == levelFail {
			return f.Check + ": " + f.Detail
		}
	}
	return ""
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
