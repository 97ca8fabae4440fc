package beads

import (
	"context"
	"fmt"
	"slices"
)

// Planning edits: dropping a dependency and deleting a task, for both
// backends.

func (s *builtinStore) RemoveDependency(ctx context.Context, id, dependsOn string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if !hasDep(t.Dependencies, id, dependsOn) {
			return fmt.Errorf("beads: %s does not depend on %s: %w", id, dependsOn, ErrNotFound)
		}
		t.Dependencies = slices.DeleteFunc(t.Dependencies, func(d Dependency) bool {
			return (d.IssueID == id || d.IssueID == "") && d.DependsOnID == dependsOn && blockingType(d.Type)
		})
		return nil
	})
	return err
}

// Delete rewrites the file without the task's line and without any edge
// on it, like bd delete, which cleans up references.
func (s *builtinStore) Delete(ctx context.Context, id string) error {
	sn, release, err := s.writable(ctx)
	if err != nil {
		return err
	}
	defer release()
	if _, err := s.find(sn, id); err != nil {
		return err
	}
	// From here on the snapshot is being changed: drop it on failure so
	// the next read reloads the file.
	ok := false
	defer func() {
		if !ok {
			s.snap = nil
		}
	}()
	keep := sn.recs[:0:0]
	for _, r := range sn.recs {
		if r.kind == "issue" && r.id == id {
			continue
		}
		if slices.ContainsFunc(r.deps, func(d edge) bool { return d.DependsOnID == id }) {
			full, err := sn.full(r)
			if err != nil {
				return err
			}
			t := cloneTask(full)
			t.Dependencies = slices.DeleteFunc(t.Dependencies, func(d Dependency) bool { return d.DependsOnID == id })
			t.UpdatedAt = s.now()
			r.setTask(&t)
			r.dirty = true
		}
		keep = append(keep, r)
	}
	sn.recs = keep
	sn.byID = map[string]int{}
	for i, r := range sn.recs {
		if r.kind == "issue" {
			sn.byID[r.id] = i
		}
	}
	if err := s.write(sn); err != nil {
		return err
	}
	ok = true
	return nil
}

func (s *bdStore) RemoveDependency(ctx context.Context, id, dependsOn string) error {
	t, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if !slices.Contains(t.BlockedBy(), dependsOn) {
		return fmt.Errorf("beads: %s does not depend on %s: %w", id, dependsOn, ErrNotFound)
	}
	// The task may become ready: the cache is refreshed, not patched.
	return s.simple(ctx, patch{apply: without(id)}, "dep", "remove", "--json", "--", id, dependsOn)
}

func (s *bdStore) Delete(ctx context.Context, id string) error {
	if _, err := s.Get(ctx, id); err != nil {
		return err
	}
	// Tasks that waited for it may become ready: refresh.
	return s.simple(ctx, patch{apply: without(id)}, "delete", "--force", "--json", "--", id)
}
