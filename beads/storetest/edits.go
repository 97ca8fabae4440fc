package storetest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// The contract on changing tasks: close and reopen, block, labels,
// updates, dependencies, deletion, bad input, and a store seeing its own
// writes.

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
