package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/orchestrator"
)

type statusReport struct {
	Root     string         `json:"root"`
	Version  string         `json:"version"`
	Backend  backendInfo    `json:"backend"`
	Tasks    map[string]int `json:"tasks"`
	Total    int            `json:"total"`
	Ready    int            `json:"ready"`
	Config   configSummary  `json:"config"`
	Running  *runningInfo   `json:"running"`
	Planning string         `json:"planningState"`
	// Kept is work Chorus saved before removing a worktree or branch, or
	// when an agent rewound its branch; it stays until `chorus prune --kept`.
	Kept  []gitx.Kept  `json:"kept"`
	Usage *usageReport `json:"usage,omitempty"`
	// Questions are the agents' questions waiting for a person.
	Questions []pendingQuestion `json:"questions"`
	// Hold is why autopilot starts no agents now (an outage, a usage
	// limit) and until when.
	Hold *orchestrator.Hold `json:"hold,omitempty"`
}

// usageReport is what agents reported spending in the current (or last)
// session, as the engine persisted it: the session's total from
// state.json, and per task from state.json (tasks still running or left
// unfinished) and the session log (tasks completed in the session).
type usageReport struct {
	SessionStarted time.Time                     `json:"sessionStarted"`
	Session        orchestrator.Usage            `json:"session"`
	Tasks          map[string]orchestrator.Usage `json:"tasks"`
}

type backendInfo struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

type configSummary struct {
	Initialised     bool     `json:"initialised"`
	Mode            string   `json:"mode"`
	MaxParallel     int      `json:"maxParallel"`
	DefaultAgent    string   `json:"defaultAgent"`
	Agents          []string `json:"agents"`
	QualityCommands []string `json:"qualityCommands"`
	TaskIDPrefix    string   `json:"taskIdPrefix"`
	TargetBranch    string   `json:"targetBranch"`
}

type runningInfo struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
}

func newStatusCmd(g *globals, bi BuildInfo) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Summarise tasks by status, the configuration and the task backend",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := g.loadProject(ctx, cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			info, err := beads.DetectBackend(p.root, "")
			if err != nil {
				return withCode(ExitTasks, err)
			}
			s, err := p.store(ctx)
			if err != nil {
				return err
			}
			if c, ok := s.(interface{ Shutdown() }); ok {
				defer c.Shutdown()
			}
			n, err := beads.CountTasks(ctx, s, beads.ReadyOptions{})
			if err != nil {
				return withCode(ExitTasks, err)
			}
			r := statusReport{Root: p.root, Version: bi.Version, Backend: backendInfo{info.Name, info.Reason},
				Tasks: map[string]int{}, Total: n.Total, Ready: n.Ready}
			for st, k := range n.ByStatus {
				r.Tasks[st] = k
			}
			// Shown as people read them: a failed task is blocked with the failed label.
			if n.Failed > 0 {
				r.Tasks["failed"] = n.Failed
				if r.Tasks[beads.StatusBlocked] -= n.Failed; r.Tasks[beads.StatusBlocked] == 0 {
					delete(r.Tasks, beads.StatusBlocked)
				}
			}
			r.Config = configSummary{Initialised: p.loaded != nil, Mode: p.cfg.Mode, MaxParallel: p.cfg.Agents.MaxParallel,
				DefaultAgent: p.cfg.Agents.Default, Agents: p.cfg.AgentNames(), QualityCommands: []string{},
				TaskIDPrefix: p.cfg.Project.TaskIDPrefix, TargetBranch: p.cfg.Merge.TargetBranch}
			for _, q := range p.cfg.SortedQuality() {
				r.Config.QualityCommands = append(r.Config.QualityCommands, q.Name)
			}
			if p.loaded != nil {
				r.Usage = readUsage(p.dir)
				if st, err := orchestrator.LoadState(p.dir.State()); err == nil && st != nil {
					r.Hold = st.Hold
				}
				r.Planning, _, _ = planningState(p.dir.PlanningState())
				if st, err := p.dir.InspectLock(); err == nil && st.Held {
					r.Running = &runningInfo{PID: st.Holder.PID, Host: st.Holder.Host}
				}
			}
			r.Kept, err = gitx.ListKept(ctx, p.root)
			if err != nil {
				return withCode(ExitFailure, fmt.Errorf("listing kept work: %w", err))
			}
			if r.Kept == nil {
				r.Kept = []gitx.Kept{}
			}
			if r.Questions, err = pendingQuestions(p.dir); err != nil {
				return withCode(ExitFailure, fmt.Errorf("reading pending questions: %w", err))
			}
			if r.Questions == nil {
				r.Questions = []pendingQuestion{}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			printStatus(cmd.OutOrStdout(), r)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printStatus(w io.Writer, r statusReport) {
	fmt.Fprintf(w, "Repository  %s\n", r.Root)
	if !r.Config.Initialised {
		fmt.Fprintln(w, "Chorus      not set up (run `chorus init --yes`); showing defaults")
	} else if r.Running != nil {
		fmt.Fprintf(w, "Chorus      running (pid %d on %s)\n", r.Running.PID, r.Running.Host)
	} else {
		fmt.Fprintln(w, "Chorus      not running")
	}
	fmt.Fprintf(w, "Tasks       %d total, %d ready", r.Total, r.Ready)
	var keys []string
	for k := range r.Tasks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, ", %d %s", r.Tasks[k], k)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Backend     %s (%s)\n", r.Backend.Name, r.Backend.Reason)
	fmt.Fprintf(w, "Mode        %s, up to %d agents, default agent %s\n", r.Config.Mode, r.Config.MaxParallel, r.Config.DefaultAgent)
	q := "none"
	if len(r.Config.QualityCommands) > 0 {
		q = strings.Join(r.Config.QualityCommands, ", ")
	}
	fmt.Fprintf(w, "Quality     %s\n", q)
	if r.Planning != "" {
		fmt.Fprintf(w, "Planning    %s\n", r.Planning)
	}
	if h := r.Hold; h != nil {
		fmt.Fprintf(w, "Held        %s since %s: %s; next try %s\n", h.Kind, h.Since.Local().Format("15:04:05"), line(h.Cause), h.Until.Local().Format("15:04:05"))
	}
	for _, q := range r.Questions {
		fmt.Fprintf(w, "Question    %s asks: %s\n", line(q.Task), line(q.Question))
		for i, o := range q.Options {
			fmt.Fprintf(w, "            %d) %s\n", i+1, line(o))
		}
		fmt.Fprintf(w, "            answer: %s\n", q.Answer)
	}
	if len(r.Kept) > 0 {
		fmt.Fprintf(w, "Kept        %d ref(s) of saved work (restore with `git switch -c NAME REF`; delete with `chorus prune --kept`):\n", len(r.Kept))
		for _, k := range r.Kept {
			fmt.Fprintf(w, "            %s  %s  %s %s\n", k.Time.Local().Format("2006-01-02 15:04"), k.Commit[:min(12, len(k.Commit))], line(k.Kind), line(k.Ref))
		}
	}
	if u := r.Usage; u != nil {
		when := "last session"
		if r.Running != nil {
			when = "this session"
		}
		fmt.Fprintf(w, "Usage       %s (%s, started %s)\n", u.Session, when, u.SessionStarted.Local().Format("2006-01-02 15:04"))
		ids := make([]string, 0, len(u.Tasks))
		for id := range u.Tasks {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			fmt.Fprintf(w, "  %-10s%s\n", line(id), u.Tasks[id])
		}
	}
}

// readUsage reads what the engine persisted about spending; nil when no
// session has recorded any.
func readUsage(dir chorusdir.Dir) *usageReport {
	st, err := orchestrator.LoadState(dir.State())
	if err != nil || st == nil {
		return nil
	}
	u := &usageReport{SessionStarted: st.StartedAt, Session: st.Usage, Tasks: map[string]orchestrator.Usage{}}
	// A completed task leaves state.json; its completion event in the
	// session log carries its total.
	if f, err := os.Open(dir.SessionLog()); err == nil {
		defer f.Close()
		since := st.StartedAt.Truncate(time.Second) // log times are in whole seconds
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			b := sc.Bytes()
			if !bytes.Contains(b, []byte(`"`+orchestrator.EvCompleted+`"`)) {
				continue
			}
			var e struct {
				TS      time.Time `json:"ts"`
				Event   string    `json:"event"`
				Details struct {
					TaskID string              `json:"taskId"`
					Usage  *orchestrator.Usage `json:"usage"`
				} `json:"details"`
			}
			if json.Unmarshal(b, &e) != nil || orchestrator.EventKind(e.Event) != orchestrator.EvCompleted || e.TS.Before(since) || e.Details.Usage == nil || e.Details.TaskID == "" {
				continue
			}
			if !e.Details.Usage.IsZero() {
				u.Tasks[e.Details.TaskID] = *e.Details.Usage
			}
		}
	}
	// Newer: tasks still running or left unfinished (again).
	for id, tr := range st.Tasks {
		if !tr.Usage.IsZero() {
			u.Tasks[id] = tr.Usage
		}
	}
	if u.Session.IsZero() && len(u.Tasks) == 0 {
		return nil
	}
	return u
}
