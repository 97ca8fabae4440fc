package beads_test

import (
	"maps"
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
