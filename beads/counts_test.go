package beads_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// listOnly hides the built-in store's Counter, so CountTasks takes the
// List-and-Ready path that decodes every task.
type listOnly struct{ beads.Store }

// The counts from the index pass are the ones List and Ready give: by
// status, failed ones (blocked and labelled failed) apart, ready after
// blockers, deferred labels and memory records.
func TestCountsMatchListAndReady(t *testing.T) {
	repo := initRepo(t)
	writeBig(t, repo, 3000)
	s := builtin(t, repo)
	ids := []string{"ch-00005", "ch-00007", "ch-00009"}
	for _, id := range ids {
		if err := s.Block(bg, id, "stuck"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddLabel(bg, ids[0], beads.LabelFailed); err != nil {
		t.Fatal(err)
	}
	if err := s.AddLabel(bg, "ch-00003", beads.LabelDeferred); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []beads.ReadyOptions{{}, {IncludeDeferred: true}, {ExcludeLabels: []string{"area-3"}}} {
		got, err := beads.CountTasks(bg, s, opt)
		if err != nil {
			t.Fatal(err)
		}
		want, err := beads.CountTasks(bg, listOnly{s}, opt)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != want.Total || got.Ready != want.Ready || got.Failed != want.Failed || !maps.Equal(got.ByStatus, want.ByStatus) {
			t.Errorf("%+v: index pass %+v, List and Ready %+v", opt, got, want)
		}
		if got.Total != 3000 || got.Failed != 1 || got.ByStatus[beads.StatusBlocked] < 3 || got.Ready == 0 {
			t.Errorf("%+v: counts %+v", opt, got)
		}
	}
}

// A second store (another process) gets the counts from the cache while
// the file is unchanged, and fresh ones after a write.
func TestCountsCachedUntilTheFileChanges(t *testing.T) {
	repo := initRepo(t)
	writeBig(t, repo, 500)
	first, err := beads.CountTasks(bg, builtin(t, repo), beads.ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(repo, ".beads", "chorus-cache"))
	cached := false
	for _, e := range entries {
		cached = cached || strings.HasPrefix(e.Name(), "counts-")
	}
	if !cached {
		t.Fatalf("no counts in the cache: %v", entries)
	}
	s := builtin(t, repo)
	again, err := beads.CountTasks(bg, s, beads.ReadyOptions{})
	if err != nil || !maps.Equal(again.ByStatus, first.ByStatus) || again.Ready != first.Ready || again.Total != first.Total {
		t.Fatalf("cached %+v (%v), first %+v", again, err, first)
	}
	ready, err := s.Ready(bg, beads.ReadyOptions{})
	if err != nil || len(ready) == 0 {
		t.Fatal(err)
	}
	if err := s.Close(bg, ready[0].ID, "done"); err != nil {
		t.Fatal(err)
	}
	after, err := beads.CountTasks(bg, builtin(t, repo), beads.ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := beads.CountTasks(bg, listOnly{builtin(t, repo)}, beads.ReadyOptions{})
	if after.ByStatus[beads.StatusClosed] != first.ByStatus[beads.StatusClosed]+1 || after.Ready != want.Ready {
		t.Fatalf("after closing %s: %+v, want %+v", ready[0].ID, after, want)
	}
}
