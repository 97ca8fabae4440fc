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
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/remote"
	"github.com/chorus-dev/chorus/worktree"
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
	Kept  []worktree.Kept `json:"kept"`
	Usage *usageReport    `json:"usage,omitempty"`
	// Questions are the agents' questions waiting for a person.
	Questions []pendingQuestion `json:"questions"`
	// Hold is why autopilot starts no agents now (an outage, a usage
	// limit) and until when.
	Hold *orchestrator.Hold `json:"hold,omitempty"`
	// Mode is the running engine's mode, the recorded choice and the
	// configured one, and what a plain start uses (the mode rule).
	Mode modeReport `json:"mode"`
	// Agents are the running engine's agents (empty with none running).
	Agents []agentInfo `json:"agents"`
	// Paused: the running engine starts no new agents.
	Paused bool `json:"paused,omitempty"`
	// Instance is this checkout's Chorus id; Team the instances whose
	// heartbeats the task store holds (several share one bd server).
	Instance string       `json:"instance,omitempty"`
	Team     []teamMember `json:"team"`
}

// teamMember is one Chorus instance working this task queue.
type teamMember struct {
	ID     string    `json:"id"`
	Host   string    `json:"host"`
	PID    int       `json:"pid"`
	Beat   time.Time `json:"lastHeartbeat"`
	Age    int64     `json:"heartbeatAgeSeconds"`
	Agents []string  `json:"agents"` // agent:task
	Self   bool      `json:"self,omitempty"`
	// Silent: its heartbeat is older than team.deadAfterSeconds; the next
	// instance to look releases its claims.
	Silent bool `json:"silent,omitempty"`
}

func teamOf(beats map[string]orchestrator.Heartbeat, me string, deadAfter time.Duration, now time.Time) []teamMember {
	out := []teamMember{}
	for id, h := range beats {
		m := teamMember{ID: id, Host: h.Host, PID: h.PID, Beat: h.Beat, Agents: h.Agents, Self: id == me}
		if m.Agents == nil {
			m.Agents = []string{}
		}
		m.Age = int64(now.Sub(h.Beat).Seconds())
		m.Silent = !m.Self && now.Sub(h.Beat) > deadAfter
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// agentInfo is one running agent, as `chorus status` lists it.
type agentInfo struct {
	Name      string    `json:"name"`
	Profile   string    `json:"profile"`
	Task      string    `json:"task"`
	Title     string    `json:"title,omitempty"`
	State     string    `json:"state"`  // running, checking, waiting for a person, idle, stopping
	Status    string    `json:"status"` // the engine's own word
	Iteration int       `json:"iteration"`
	StartedAt time.Time `json:"startedAt"`
	Runtime   int64     `json:"runtimeSeconds"`
	Tokens    int64     `json:"tokens"`
	CostUSD   float64   `json:"costUsd"`
	Why       string    `json:"why,omitempty"` // the question or what stops it
}

// agentsOf lists a snapshot's agents by name.
func agentsOf(snap orchestrator.Snapshot, now time.Time) []agentInfo {
	out := []agentInfo{}
	for _, a := range snap.Agents {
		ai := agentInfo{Name: a.ID, Profile: a.Type, Task: a.TaskID, Title: a.Title, State: agentState(a.Status), Status: a.Status,
			Iteration: a.Iteration, StartedAt: a.StartedAt, Tokens: a.Usage.Tokens(), CostUSD: a.Usage.CostUSD}
		if !a.StartedAt.IsZero() {
			ai.Runtime = int64(now.Sub(a.StartedAt).Seconds())
		}
		switch {
		case a.Question != "":
			ai.Why = a.Question
		case a.Stuck != "":
			ai.Why = a.Stuck
		}
		out = append(out, ai)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// liveUsage is the running engine's spending: the session's, and each
// task's that it still holds.
func liveUsage(snap orchestrator.Snapshot) *usageReport {
	u := &usageReport{SessionStarted: snap.StartedAt, Session: snap.Usage, Tasks: map[string]orchestrator.Usage{}}
	for id, tr := range snap.Tasks {
		if !tr.Usage.IsZero() {
			u.Tasks[id] = tr.Usage
		}
	}
	if u.Session.IsZero() && len(u.Tasks) == 0 {
		return nil
	}
	return u
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
			shortLived()
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
			if n.Malformed != nil { // counted around, as task list reads around it
				fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+n.Malformed.Error())
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
			r.Agents = []agentInfo{}
			if p.loaded != nil {
				if in, err := p.dir.Instance(); err == nil {
					r.Instance = in.ID
				}
			}
			beats, err := orchestrator.ReadTeam(ctx, s)
			if err != nil {
				return withCode(ExitTasks, fmt.Errorf("reading the team's heartbeats: %w", err))
			}
			r.Team = teamOf(beats, r.Instance, time.Duration(p.cfg.Team.DeadAfterSeconds)*time.Second, time.Now())
			r.Mode = modeReport{Configured: p.cfg.Mode}
			r.Mode.Next, r.Mode.From = modeRule(p.cfg.Mode, "")
			var ec *remote.Client
			if p.loaded != nil {
				// A running engine is asked: state.json lags behind its journal.
				if ec, err = cliEngine(ctx, p); err != nil {
					return err
				}
				if ec != nil {
					defer ec.Close()
				}
				if r.Mode, err = modeInfo(ctx, p, ec); err != nil {
					return withCode(ExitFailure, err)
				}
				r.Planning, _, _ = planningState(p.dir.PlanningState())
				if ec != nil {
					snap, err := ec.Current(ctx)
					if err != nil {
						return withCode(ExitFailure, err)
					}
					host, _ := os.Hostname()
					r.Running = &runningInfo{PID: ec.PID(), Host: host}
					r.Agents, r.Usage, r.Questions, r.Paused = agentsOf(snap, time.Now()), liveUsage(snap), questionsOf(snap.Agents), snap.Paused
					r.Hold = snap.Hold
				} else {
					r.Usage = readUsage(p.dir)
					if st, err := orchestrator.LoadState(p.dir.State()); err == nil && st != nil {
						r.Hold = st.Hold
					}
					if st, err := p.dir.InspectLock(); err == nil && st.Held {
						r.Running = &runningInfo{PID: st.Holder.PID, Host: st.Holder.Host}
					}
					if r.Questions, err = pendingQuestions(p.dir); err != nil {
						return withCode(ExitFailure, fmt.Errorf("reading pending questions: %w", err))
					}
				}
			}
			r.Kept, err = worktree.ListKept(ctx, p.root)
			if err != nil {
				return withCode(ExitFailure, fmt.Errorf("listing kept work: %w", err))
			}
			if r.Kept == nil {
				r.Kept = []worktree.Kept{}
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
	if r.Instance != "" {
		fmt.Fprintf(w, "Instance    %s\n", r.Instance)
	}
	if len(r.Team) > 1 || (len(r.Team) == 1 && !r.Team[0].Self) {
		fmt.Fprintf(w, "Team        %d instance(s) on this task queue\n", len(r.Team))
		for _, m := range r.Team {
			agents := "no agents"
			if len(m.Agents) > 0 {
				agents = fmt.Sprintf("%d agent(s): %s", len(m.Agents), strings.Join(m.Agents, ", "))
			}
			note := ""
			if m.Self {
				note = " (this one)"
			} else if m.Silent {
				note = " (silent: its claims are released by the next instance to look)"
			}
			fmt.Fprintf(w, "  %-24s on %s pid %d, heartbeat %s ago, %s%s\n", line(m.ID), line(m.Host), m.PID,
				(time.Duration(m.Age) * time.Second).String(), line(agents), note)
		}
	}
	mode := r.Mode.Next + " at the next start (" + r.Mode.From + ")"
	if r.Mode.Live != "" {
		mode = r.Mode.Live + " (live)"
		if r.Paused {
			mode += ", paused"
		}
		if r.Mode.Live != r.Mode.Next {
			mode += "; " + r.Mode.Next + " at the next start (" + r.Mode.From + ")"
		}
	}
	fmt.Fprintf(w, "Mode        %s\n", mode)
	fmt.Fprintf(w, "Agents      up to %d, default agent %s\n", r.Config.MaxParallel, r.Config.DefaultAgent)
	for _, a := range r.Agents {
		cost := "-"
		if a.Tokens > 0 {
			cost = fmt.Sprintf("%d tok, $%.4f", a.Tokens, a.CostUSD)
		}
		fmt.Fprintf(w, "  %-24s %-12s %-20s iteration %d, %s, %s\n", line(a.Name), line(a.Task), a.State, a.Iteration,
			(time.Duration(a.Runtime) * time.Second).String(), cost)
		if a.Why != "" {
			fmt.Fprintf(w, "  %-24s %s\n", "", line(a.Why))
		}
	}
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
