// Package planning is the planning phase: .chorus/planning-state.json, the
// Plan Agent's prompts, and the review loop that validates the tasks it
// made and hands the violations back until the plan is valid. It drives
// the engine only through its planning entry point and Commands.
package planning

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/chorus-dev/chorus/chorusdir"
)

// Status values of planning-state.json.
const (
	StatusPlanning       = "planning"       // the Plan Agent is writing tasks
	StatusReviewing      = "reviewing"      // validating tasks against the rules
	StatusReady          = "ready"          // all tasks valid, mode not chosen
	StatusImplementation = "implementation" // a mode was chosen; agents work
)

// Statuses lists every valid status.
var Statuses = []string{StatusPlanning, StatusReviewing, StatusReady, StatusImplementation}

// Summary is what the plan is for.
type Summary struct {
	UserGoal       string `json:"userGoal"`
	EstimatedTasks int    `json:"estimatedTasks"`
	// From is the spec file the plan was decomposed from, if any.
	From string `json:"from,omitempty"`
}

// Iteration is one pass of the review loop.
type Iteration struct {
	Iteration int `json:"iteration"`
	Issues    int `json:"issues"` // violations found
	Fixed     int `json:"fixed"`  // of those, gone at the next check
}

// State is planning-state.json.
type State struct {
	Status           string      `json:"status"`
	ChosenMode       *string     `json:"chosenMode"` // null until chosen
	PlanSummary      Summary     `json:"planSummary"`
	ReviewIterations []Iteration `json:"reviewIterations"`
	// Agent is the profile the Plan Agent ran with, so a resumed session
	// uses the same one.
	Agent string `json:"agent,omitempty"`
}

// Mode returns the chosen mode or "".
func (s State) Mode() string {
	if s.ChosenMode == nil {
		return ""
	}
	return *s.ChosenMode
}

// Unplanned: status planning with no goal and no spec, as init leaves a
// project with no tasks. Nothing is being written: there is nothing to
// resume, and tasks made by hand are not waiting on a plan.
func (s State) Unplanned() bool {
	return s.Status == StatusPlanning && s.PlanSummary.UserGoal == "" && s.PlanSummary.From == ""
}

// Load reads planning-state.json. A missing file is a project set up
// before the planning phase existed: status ready, nothing chosen.
func Load(path string) (State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return State{Status: StatusReady}, nil
	}
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%s: %v; fix the JSON or delete the file (planning starts over)", path, err)
	}
	if s.Status == "" {
		s.Status = StatusReady
	}
	if err := s.validate(); err != nil {
		return State{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func (s State) validate() error {
	ok := false
	for _, v := range Statuses {
		ok = ok || s.Status == v
	}
	if !ok {
		return fmt.Errorf("status %q is not valid; allowed: planning, reviewing, ready, implementation", s.Status)
	}
	if m := s.Mode(); m != "" && m != "semi-auto" && m != "autopilot" {
		return fmt.Errorf("chosenMode %q is not valid; allowed: null, semi-auto, autopilot", m)
	}
	return nil
}

// Save writes the state atomically: a crash leaves the old or the new file.
func Save(path string, s State) error {
	if err := s.validate(); err != nil {
		return err
	}
	if s.ReviewIterations == nil {
		s.ReviewIterations = []Iteration{}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return chorusdir.WriteAtomic(path, append(b, '\n'), chorusdir.FileMode)
}

// Update loads, changes and saves the state in one step.
func Update(path string, fn func(*State)) (State, error) {
	s, err := Load(path)
	if err != nil {
		return State{}, err
	}
	fn(&s)
	return s, Save(path, s)
}
