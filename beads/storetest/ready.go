package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// The contract on readiness and claims: order, blockers, one winner of a
// concurrent claim.

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
