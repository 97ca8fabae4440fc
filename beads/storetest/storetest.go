// Package storetest is the behaviour every beads.Store must show, as one
// test suite that runs against each backend.
package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
)

// Env is one fresh, empty store.
type Env struct {
	Store   beads.Store
	RepoDir string // main repo root
	Prefix  string // id prefix new tasks get ("ch")
	// Exact is true when the backend keeps sub-second creation times, so
	// tasks created in a row sort in creation order.
	Exact bool
}

// Factory makes a fresh Env for one test.
type Factory func(t *testing.T) Env

// Run runs the contract against the stores newEnv makes.
func Run(t *testing.T, newEnv Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Env)
	}{
		{"CreateGet", testCreateGet},
		{"NotFound", testNotFound},
		{"ReadyOrderAndLabels", testReadyOrder},
		{"ReadyBlockers", testReadyBlockers},
		{"ClaimRelease", testClaimRelease},
		{"ClaimNotReady", testClaimNotReady},
		{"ConcurrentClaim", testConcurrentClaim},
		{"ClaimNext", testClaimNext},
		{"CloseReopen", testCloseReopen},
		{"Block", testBlock},
		{"Labels", testLabels},
		{"Update", testUpdate},
		{"Cycle", testCycle},
		{"RemoveDependency", testRemoveDep},
		{"Delete", testDelete},
		{"MissingDependency", testMissingDep},
		{"BadInput", testBadInput},
		{"OwnWritesVisible", testOwnWrites},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnv(t)) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func create(t *testing.T, s beads.Store, title string, opt beads.CreateOptions) beads.Task {
	t.Helper()
	task, err := s.Create(ctx(t), title, opt)
	if err != nil {
		t.Fatalf("Create(%q): %v", title, err)
	}
	if task.ID == "" {
		t.Fatalf("Create(%q) returned no id", title)
	}
	return task
}

func get(t *testing.T, s beads.Store, id string) beads.Task {
	t.Helper()
	task, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return task
}

// ready returns the up-to-date ready list (refreshing caches first).
func ready(t *testing.T, s beads.Store, opt beads.ReadyOptions) []beads.Task {
	t.Helper()
	if r, ok := s.(beads.Refresher); ok {
		if err := r.Refresh(ctx(t)); err != nil {
			t.Fatalf("Refresh: %v", err)
		}
	}
	ts, err := s.Ready(ctx(t), opt)
	if err != nil {
		t.Fatalf("Ready: %v", err)
	}
	checkOrder(t, ts)
	return ts
}

// IDs lists the tasks' ids in order.
func IDs(ts []beads.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// SameSet reports whether a and b hold the same ids in any order.
func SameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func checkOrder(t *testing.T, ts []beads.Task) {
	t.Helper()
	for i := 1; i < len(ts); i++ {
		a, b := ts[i-1], ts[i]
		ok := a.Priority < b.Priority || a.Priority == b.Priority &&
			(a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID)
		if !ok {
			t.Fatalf("ready order broken at %d: %s (P%d %s) before %s (P%d %s)", i,
				a.ID, a.Priority, a.CreatedAt, b.ID, b.Priority, b.CreatedAt)
		}
	}
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got %v, want %v", what, err, target)
	}
}

func testCreateGet(t *testing.T, e Env) {
	s := e.Store
	a := create(t, s, "First task", beads.CreateOptions{
		Priority: 0, PrioritySet: true, Labels: []string{"backend", "api"},
		Description: "Do the thing.\nSecond line.", Acceptance: "It works.",
		Model: "sonnet", Agent: "claude",
	})
	if e.Prefix != "" && !strings.HasPrefix(a.ID, e.Prefix+"-") {
		t.Errorf("id %q lacks prefix %q-", a.ID, e.Prefix)
	}
	if strings.HasPrefix(a.ID, e.Prefix+"--") {
		t.Errorf("id %q has a doubled dash", a.ID)
	}
	g := get(t, s, a.ID)
	if g.Title != "First task" || g.Description != "Do the thing.\nSecond line." || g.AcceptanceCriteria != "It works." {
		t.Errorf("text fields: %+v", g)
	}
	if g.Priority != 0 || g.Status != beads.StatusOpen || g.IssueType != "task" || g.Assignee != "" {
		t.Errorf("priority/status/type/assignee: %d %q %q %q", g.Priority, g.Status, g.IssueType, g.Assignee)
	}
	if !SameSet(g.Labels, []string{"backend", "api"}) {
		t.Errorf("labels %v", g.Labels)
	}
	if g.Metadata[beads.MetaModel] != "sonnet" || g.Metadata[beads.MetaAgent] != "claude" {
		t.Errorf("metadata %v", g.Metadata)
	}
	if g.CreatedAt.IsZero() || g.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at %v", g.CreatedAt)
	}
	b := create(t, s, "Second", beads.CreateOptions{})
	if b.Priority != 2 || get(t, s, b.ID).Priority != 2 {
		t.Errorf("default priority: %d", b.Priority)
	}
	if b.ID == a.ID {
		t.Fatal("duplicate ids")
	}
	bug := create(t, s, "A bug", beads.CreateOptions{Type: "bug", Priority: 4})
	if g := get(t, s, bug.ID); g.IssueType != "bug" || g.Priority != 4 {
		t.Errorf("type/priority: %q %d", g.IssueType, g.Priority)
	}
	all, err := s.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !SameSet(IDs(all), []string{a.ID, b.ID, bug.ID}) {
		t.Errorf("List: %v", IDs(all))
	}
}

func testNotFound(t *testing.T, e Env) {
	s := e.Store
	create(t, s, "exists", beads.CreateOptions{})
	missing := e.Prefix + "-zzzzzz"
	_, err := s.Get(ctx(t), missing)
	wantErr(t, err, beads.ErrNotFound, "Get")
	_, err = s.Claim(ctx(t), missing, "agent1")
	wantErr(t, err, beads.ErrNotFound, "Claim")
	wantErr(t, s.Close(ctx(t), missing, "done"), beads.ErrNotFound, "Close")
	wantErr(t, s.Release(ctx(t), missing), beads.ErrNotFound, "Release")
	wantErr(t, s.AddLabel(ctx(t), missing, "x"), beads.ErrNotFound, "AddLabel")
	wantErr(t, s.RemoveLabel(ctx(t), missing, "x"), beads.ErrNotFound, "RemoveLabel")
}
