// Package storetest is the behaviour every beads.Store must show, as one
// test suite that runs against each backend.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

func testReadyOrder(t *testing.T, e Env) {
	s := e.Store
	a := create(t, s, "a p2", beads.CreateOptions{})
	b := create(t, s, "b p1", beads.CreateOptions{Priority: 1})
	c := create(t, s, "c p3", beads.CreateOptions{Priority: 3})
	d := create(t, s, "d deferred", beads.CreateOptions{Priority: 1, Labels: []string{beads.LabelDeferred}})
	f := create(t, s, "e p2 ui", beads.CreateOptions{Labels: []string{"ui"}})
	got := ready(t, s, beads.ReadyOptions{})
	if !SameSet(IDs(got), []string{a.ID, b.ID, c.ID, f.ID}) {
		t.Fatalf("ready %v", IDs(got))
	}
	if got[0].ID != b.ID || got[len(got)-1].ID != c.ID {
		t.Errorf("priority order: %v", IDs(got))
	}
	if e.Exact && !slices.Equal(IDs(got), []string{b.ID, a.ID, f.ID, c.ID}) {
		t.Errorf("oldest first within a priority: %v", IDs(got))
	}
	got = ready(t, s, beads.ReadyOptions{IncludeDeferred: true})
	if !slices.Contains(IDs(got), d.ID) {
		t.Errorf("IncludeDeferred: %v", IDs(got))
	}
	got = ready(t, s, beads.ReadyOptions{ExcludeLabels: []string{"ui"}})
	if slices.Contains(IDs(got), f.ID) || len(got) != 3 {
		t.Errorf("ExcludeLabels: %v", IDs(got))
	}
	got = ready(t, s, beads.ReadyOptions{IncludeLabels: []string{"ui", "nothing"}})
	if !slices.Equal(IDs(got), []string{f.ID}) {
		t.Errorf("IncludeLabels: %v", IDs(got))
	}
}

func testReadyBlockers(t *testing.T, e Env) {
	s := e.Store
	a := create(t, s, "a", beads.CreateOptions{})
	b := create(t, s, "b needs a", beads.CreateOptions{Deps: []string{a.ID}})
	c := create(t, s, "c needs b", beads.CreateOptions{Deps: []string{b.ID}})
	if g := get(t, s, b.ID); !slices.Equal(g.BlockedBy(), []string{a.ID}) {
		t.Errorf("b.BlockedBy = %v (deps %+v)", g.BlockedBy(), g.Dependencies)
	}
	if got := IDs(ready(t, s, beads.ReadyOptions{})); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("ready %v, want only a", got)
	}
	if _, err := s.Claim(ctx(t), a.ID, "agent1"); err != nil {
		t.Fatal(err)
	}
	// An in-progress blocker still blocks.
	if got := IDs(ready(t, s, beads.ReadyOptions{})); len(got) != 0 {
		t.Fatalf("ready %v, want none", got)
	}
	if err := s.Close(ctx(t), a.ID, "done"); err != nil {
		t.Fatal(err)
	}
	if got := IDs(ready(t, s, beads.ReadyOptions{})); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("ready %v, want b (c still waits for b)", got)
	}
	// Closing with an open blocker is refused, as bd refuses it.
	if err := s.Close(ctx(t), c.ID, "early"); err == nil {
		t.Error("closing c with open blocker b succeeded")
	}
	d := create(t, s, "d", beads.CreateOptions{})
	f := create(t, s, "f", beads.CreateOptions{})
	if err := s.AddDependency(ctx(t), f.ID, d.ID); err != nil {
		t.Fatal(err)
	}
	got := IDs(ready(t, s, beads.ReadyOptions{}))
	if !SameSet(got, []string{b.ID, d.ID}) {
		t.Fatalf("ready %v, want b and d", got)
	}
}

func testClaimRelease(t *testing.T, e Env) {
	s := e.Store
	x := create(t, s, "x", beads.CreateOptions{})
	got, err := s.Claim(ctx(t), x.ID, "agent1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != beads.StatusInProgress || got.Assignee != "agent1" {
		t.Errorf("claimed: %q %q", got.Status, got.Assignee)
	}
	g := get(t, s, x.ID)
	if g.Status != beads.StatusInProgress || g.Assignee != "agent1" || g.StartedAt == nil {
		t.Errorf("after claim: %q %q %v", g.Status, g.Assignee, g.StartedAt)
	}
	_, err = s.Claim(ctx(t), x.ID, "agent2")
	wantErr(t, err, beads.ErrClaimed, "second claimer")
	if _, err := s.Claim(ctx(t), x.ID, "agent1"); err != nil {
		t.Errorf("same actor again: %v", err)
	}
	if err := s.Release(ctx(t), x.ID); err != nil {
		t.Fatal(err)
	}
	g = get(t, s, x.ID)
	if g.Status != beads.StatusOpen || g.Assignee != "" {
		t.Errorf("after release: %q %q", g.Status, g.Assignee)
	}
	if got := IDs(ready(t, s, beads.ReadyOptions{})); !slices.Equal(got, []string{x.ID}) {
		t.Errorf("released task not ready: %v", got)
	}
	if _, err := s.Claim(ctx(t), x.ID, "agent2"); err != nil {
		t.Errorf("claim after release: %v", err)
	}
}

func testClaimNotReady(t *testing.T, e Env) {
	s := e.Store
	a := create(t, s, "a", beads.CreateOptions{})
	b := create(t, s, "b", beads.CreateOptions{Deps: []string{a.ID}})
	_, err := s.Claim(ctx(t), b.ID, "agent1")
	wantErr(t, err, beads.ErrNotReady, "claim blocked task")
	if g := get(t, s, b.ID); g.Status != beads.StatusOpen || g.Assignee != "" {
		t.Errorf("blocked task changed: %q %q", g.Status, g.Assignee)
	}
	if err := s.Close(ctx(t), a.ID, "done"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Claim(ctx(t), a.ID, "agent1")
	wantErr(t, err, beads.ErrNotOpen, "claim closed task")
}

func testConcurrentClaim(t *testing.T, e Env) {
	s := e.Store
	x := create(t, s, "contended", beads.CreateOptions{})
	ready(t, s, beads.ReadyOptions{})
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Claim(ctx(t), x.ID, fmt.Sprintf("agent%d", i))
		}()
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, beads.ErrClaimed):
			t.Errorf("claimer %d: %v", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d winners, want 1 (%v)", wins, errs)
	}
}

func testClaimNext(t *testing.T, e Env) {
	s := e.Store
	create(t, s, "epic", beads.CreateOptions{Type: "epic", Priority: 0, PrioritySet: true})
	lo := create(t, s, "low", beads.CreateOptions{Priority: 3})
	hi := create(t, s, "high", beads.CreateOptions{Priority: 1})
	ready(t, s, beads.ReadyOptions{})
	got, err := beads.ClaimNext(ctx(t), s, "agent1", beads.ReadyOptions{})
	if err != nil || got.ID != hi.ID {
		t.Fatalf("ClaimNext = %s, %v; want %s", got.ID, err, hi.ID)
	}
	got, err = beads.ClaimNext(ctx(t), s, "agent2", beads.ReadyOptions{})
	if err != nil || got.ID != lo.ID {
		t.Fatalf("ClaimNext = %s, %v; want %s", got.ID, err, lo.ID)
	}
	_, err = beads.ClaimNext(ctx(t), s, "agent3", beads.ReadyOptions{})
	wantErr(t, err, beads.ErrNotFound, "nothing left")
}

func testCloseReopen(t *testing.T, e Env) {
	s := e.Store
	x := create(t, s, "x", beads.CreateOptions{})
	if _, err := s.Claim(ctx(t), x.ID, "agent1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx(t), x.ID, "Implemented in abc123"); err != nil {
		t.Fatal(err)
	}
	g := get(t, s, x.ID)
	if g.Status != beads.StatusClosed || g.CloseReason != "Implemented in abc123" || g.ClosedAt == nil {
		t.Errorf("after close: %q %q %v", g.Status, g.CloseReason, g.ClosedAt)
	}
	all, err := s.List(ctx(t))
	if err != nil || !slices.Contains(IDs(all), x.ID) {
		t.Errorf("List lacks closed task: %v %v", IDs(all), err)
	}
	if got := ready(t, s, beads.ReadyOptions{}); len(got) != 0 {
		t.Errorf("closed task ready: %v", IDs(got))
	}
	if err := s.Reopen(ctx(t), x.ID); err != nil {
		t.Fatal(err)
	}
	g = get(t, s, x.ID)
	if g.Status != beads.StatusOpen || g.Assignee != "" || g.ClosedAt != nil {
		t.Errorf("after reopen: %q %q %v", g.Status, g.Assignee, g.ClosedAt)
	}
	if got := IDs(ready(t, s, beads.ReadyOptions{})); !slices.Equal(got, []string{x.ID}) {
		t.Errorf("reopened task not ready: %v", got)
	}
	if _, err := s.Claim(ctx(t), x.ID, "agent2"); err != nil {
		t.Errorf("claim after reopen: %v", err)
	}
}

func testBlock(t *testing.T, e Env) {
	s := e.Store
	x := create(t, s, "x", beads.CreateOptions{})
	if err := s.Block(ctx(t), x.ID, "needs a design decision"); err != nil {
		t.Fatal(err)
	}
	if err := s.Block(ctx(t), x.ID, "still waiting"); err != nil {
		t.Fatal(err)
	}
	g := get(t, s, x.ID)
	if g.Status != beads.StatusBlocked || !strings.Contains(g.Notes, "needs a design decision") || !strings.Contains(g.Notes, "still waiting") {
		t.Errorf("after block: %q %q", g.Status, g.Notes)
	}
	if got := ready(t, s, beads.ReadyOptions{}); len(got) != 0 {
		t.Errorf("blocked task ready: %v", IDs(got))
	}
}

func testLabels(t *testing.T, e Env) {
	s := e.Store
	x := create(t, s, "x", beads.CreateOptions{Labels: []string{"keep"}})
	if err := s.AddLabel(ctx(t), x.ID, beads.LabelFailed); err != nil {
		t.Fatal(err)
	}
	if err := s.AddLabel(ctx(t), x.ID, beads.LabelFailed); err != nil {
		t.Fatal(err)
	}
	if g := get(t, s, x.ID); !SameSet(g.Labels, []string{"keep", beads.LabelFailed}) {
		t.Errorf("labels %v", g.Labels)
	}
	if err := s.RemoveLabel(ctx(t), x.ID, beads.LabelFailed); err != nil {
		t.Fatal(err)
	}
	if g := get(t, s, x.ID); !SameSet(g.Labels, []string{"keep"}) {
		t.Errorf("labels %v", g.Labels)
	}
	if err := s.AddLabel(ctx(t), x.ID, beads.LabelDeferred); err != nil {
		t.Fatal(err)
	}
	if got := ready(t, s, beads.ReadyOptions{}); len(got) != 0 {
		t.Errorf("deferred-labelled task ready: %v", IDs(got))
	}
}

func testUpdate(t *testing.T, e Env) {
	s := e.Store
	x := create(t, s, "old", beads.CreateOptions{Description: "old d"})
	title, desc, acc, prio, n1, n2 := "new title", "new d", "new ac", 1, "note one", "note two"
	if _, err := s.Update(ctx(t), x.ID, beads.Update{Title: &title, Description: &desc, Acceptance: &acc, Priority: &prio, Notes: &n1,
		Metadata: map[string]any{"attempt": "2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx(t), x.ID, beads.Update{Notes: &n2}); err != nil {
		t.Fatal(err)
	}
	g := get(t, s, x.ID)
	if g.Title != title || g.Description != desc || g.AcceptanceCriteria != acc || g.Priority != 1 {
		t.Errorf("after update: %+v", g)
	}
	if !strings.Contains(g.Notes, n1) || !strings.Contains(g.Notes, n2) || strings.Index(g.Notes, n1) > strings.Index(g.Notes, n2) {
		t.Errorf("notes not appended in order: %q", g.Notes)
	}
	if g.Metadata["attempt"] != "2" {
		t.Errorf("metadata %v", g.Metadata)
	}
}

func testCycle(t *testing.T, e Env) {
	s := e.Store
	a := create(t, s, "a", beads.CreateOptions{})
	b := create(t, s, "b", beads.CreateOptions{Deps: []string{a.ID}})
	c := create(t, s, "c", beads.CreateOptions{Deps: []string{b.ID}})
	err := s.AddDependency(ctx(t), a.ID, b.ID)
	wantErr(t, err, beads.ErrCycle, "a → b → a")
	if want := a.ID + " → " + b.ID + " → " + a.ID; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
	err = s.AddDependency(ctx(t), a.ID, c.ID)
	wantErr(t, err, beads.ErrCycle, "a → c → b → a")
	if want := a.ID + " → " + c.ID + " → " + b.ID + " → " + a.ID; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
	if err := s.AddDependency(ctx(t), a.ID, a.ID); err == nil {
		t.Error("self dependency accepted")
	}
	if g := get(t, s, a.ID); len(g.BlockedBy()) != 0 {
		t.Errorf("refused edge stored: %v", g.BlockedBy())
	}
}

func testRemoveDep(t *testing.T, e Env) {
	s := e.Store
	a := create(t, s, "a", beads.CreateOptions{})
	b := create(t, s, "b", beads.CreateOptions{Deps: []string{a.ID}})
	if got := ready(t, s, beads.ReadyOptions{}); !SameSet(IDs(got), []string{a.ID}) {
		t.Fatalf("ready %v, want only %s", IDs(got), a.ID)
	}
	if err := s.RemoveDependency(ctx(t), b.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	if g := get(t, s, b.ID); len(g.BlockedBy()) != 0 {
		t.Errorf("edge kept: %v", g.BlockedBy())
	}
	if got := ready(t, s, beads.ReadyOptions{}); !SameSet(IDs(got), []string{a.ID, b.ID}) {
		t.Errorf("ready %v after the edge went, want %s and %s", IDs(got), a.ID, b.ID)
	}
	wantErr(t, s.RemoveDependency(ctx(t), b.ID, a.ID), beads.ErrNotFound, "removing an edge that is not there")
	// The edge that closed a cycle can be added once the old one is gone.
	if err := s.AddDependency(ctx(t), a.ID, b.ID); err != nil {
		t.Errorf("reversed edge refused after removal: %v", err)
	}
}

func testDelete(t *testing.T, e Env) {
	s := e.Store
	a := create(t, s, "a", beads.CreateOptions{})
	b := create(t, s, "b", beads.CreateOptions{Deps: []string{a.ID}})
	c := create(t, s, "c", beads.CreateOptions{})
	if err := s.Delete(ctx(t), a.ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx(t), a.ID)
	wantErr(t, err, beads.ErrNotFound, "Get of a deleted task")
	if g := get(t, s, b.ID); len(g.BlockedBy()) != 0 {
		t.Errorf("edge on the deleted task kept: %v", g.BlockedBy())
	}
	all, err := s.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !SameSet(IDs(all), []string{b.ID, c.ID}) {
		t.Errorf("list %v after delete, want %s and %s", IDs(all), b.ID, c.ID)
	}
	if got := ready(t, s, beads.ReadyOptions{}); !SameSet(IDs(got), []string{b.ID, c.ID}) {
		t.Errorf("ready %v after delete, want %s and %s", IDs(got), b.ID, c.ID)
	}
	wantErr(t, s.Delete(ctx(t), a.ID), beads.ErrNotFound, "deleting twice")
}

func testMissingDep(t *testing.T, e Env) {
	s := e.Store
	missing := e.Prefix + "-nope99"
	_, err := s.Create(ctx(t), "needs ghost", beads.CreateOptions{Deps: []string{missing}})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Create with missing dep: %v (want an error naming %s)", err, missing)
	}
	x := create(t, s, "x", beads.CreateOptions{})
	err = s.AddDependency(ctx(t), x.ID, missing)
	wantErr(t, err, beads.ErrNotFound, "AddDependency on missing id")
}

// Hostile text is stored exactly as given and never reaches a shell.
func testBadInput(t *testing.T, e Env) {
	s := e.Store
	dir := t.TempDir()
	marker := filepath.Join(dir, "PWNED")
	texts := []string{
		"$(touch " + marker + ")",
		"`touch " + marker + "`",
		"x; touch " + marker + "; echo",
		`"double" 'single' \back\slash`,
		"line one\nline two\r\n\ttabbed",
		"../../../etc/passwd",
		"\x1b[31mred\x1b[0m \x1b]0;pwned title\x07 \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\",
		"-rf",
		"--json",
		"ünïcödé ✓ 日本語",
	}
	for _, text := range texts {
		x := create(t, s, text, beads.CreateOptions{Description: text, Labels: []string{"safe"}})
		g := get(t, s, x.ID)
		if g.Title != text || g.Description != text {
			t.Errorf("stored %q / %q, want %q", g.Title, g.Description, text)
		}
		if err := s.AddLabel(ctx(t), x.ID, "l;$(touch "+marker+")"); err != nil {
			t.Errorf("AddLabel with hostile label: %v", err)
		}
	}
	for _, id := range []string{"$(touch " + marker + ")", "x; touch " + marker, "../x", "-h", "--help", "a\nb", `"'`} {
		_, err := s.Get(ctx(t), id)
		wantErr(t, err, beads.ErrNotFound, fmt.Sprintf("Get(%q)", id))
	}
	weird := e.Prefix + "-$(touch " + marker + ")"
	if x, err := s.Create(ctx(t), "explicit id", beads.CreateOptions{ID: weird}); err == nil {
		if x.ID != weird || get(t, s, weird).Title != "explicit id" {
			t.Errorf("explicit id not kept: %q", x.ID)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a shell ran hostile input")
	}
}

// A write through the store shows in Ready at once, without a refresh.
func testOwnWrites(t *testing.T, e Env) {
	s := e.Store
	a := create(t, s, "a", beads.CreateOptions{})
	b := create(t, s, "b", beads.CreateOptions{})
	ready(t, s, beads.ReadyOptions{})
	if _, err := s.Claim(ctx(t), a.ID, "agent1"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Ready(ctx(t), beads.ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(IDs(got), []string{b.ID}) {
		t.Fatalf("ready right after claim: %v, want only %s", IDs(got), b.ID)
	}
	c := create(t, s, "c", beads.CreateOptions{Priority: 0, PrioritySet: true})
	got, err = s.Ready(ctx(t), beads.ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(IDs(got), []string{c.ID, b.ID}) {
		t.Fatalf("ready right after create: %v, want %s %s", IDs(got), c.ID, b.ID)
	}
}
