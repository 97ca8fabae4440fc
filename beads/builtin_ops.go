package beads

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/taskid"
)

// The Store operations that change tasks (create, claim, close, labels,
// dependencies), each one mutate of the snapshot.

// newID makes a bd-style id: prefix, '-', base36 of a hash, as short as the
// number of tasks allows (bd's adaptive length), longer on collision.
func (s *builtinStore) newID(sn *snapshot, title string) string {
	n := len(sn.byID) + 1
	length := 3
	for length < 8 && pow36(length) < 4*n*n {
		length++
	}
	for nonce := 0; ; nonce++ {
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%s\x00%d\x00%d", title, s.now().UnixNano(), s.actor, os.Getpid(), nonce))
		enc := new(big.Int).SetBytes(h[:]).Text(36)
		l := length + nonce/8 // widen after repeated collisions
		if l > len(enc) {
			l = len(enc)
		}
		id := s.prefix + "-" + enc[:l]
		if _, taken := sn.byID[id]; !taken {
			return id
		}
	}
}

func pow36(n int) int {
	p := 1
	for range n {
		p *= 36
	}
	return p
}

func (s *builtinStore) Create(ctx context.Context, title string, opt CreateOptions) (Task, error) {
	var out Task
	if strings.TrimSpace(title) == "" {
		return out, errors.New("beads: title is required")
	}
	prio := opt.priority()
	if prio < 0 || prio > 4 {
		return out, fmt.Errorf("beads: priority %d out of range 0-4", prio)
	}
	err := s.mutate(ctx, func(sn *snapshot, touch func(*record, *Task)) error {
		for _, d := range opt.Deps {
			if _, ok := sn.byID[d]; !ok {
				return fmt.Errorf("beads: dependency %s: %w", d, ErrNotFound)
			}
		}
		id := opt.ID
		if id == "" {
			id = s.newID(sn, title)
		} else if err := taskid.Check(id); err != nil {
			return fmt.Errorf("beads: %w", err)
		} else if _, taken := sn.byID[id]; taken {
			return fmt.Errorf("beads: id %s already exists", id)
		}
		now := s.now()
		t := &Task{
			ID: id, Title: title, Description: opt.Description, AcceptanceCriteria: opt.Acceptance,
			Status: StatusOpen, Priority: prio, IssueType: opt.Type, CreatedAt: now, CreatedBy: s.actor,
		}
		if t.IssueType == "" {
			t.IssueType = "task"
		}
		for _, l := range opt.Labels {
			if l != "" && !hasLabel(t.Labels, l) {
				t.Labels = append(t.Labels, l)
			}
		}
		for _, d := range opt.Deps {
			if !hasDep(t.Dependencies, id, d) {
				t.Dependencies = append(t.Dependencies, Dependency{IssueID: id, DependsOnID: d, Type: "blocks", CreatedAt: now, CreatedBy: s.actor})
			}
		}
		if opt.Model != "" || opt.Agent != "" {
			t.Metadata = map[string]any{}
			if opt.Model != "" {
				t.Metadata[MetaModel] = opt.Model
			}
			if opt.Agent != "" {
				t.Metadata[MetaAgent] = opt.Agent
			}
		}
		r := &record{kind: "issue", line: len(sn.recs) + 1}
		sn.byID[id] = len(sn.recs)
		sn.recs = append(sn.recs, r)
		touch(r, t)
		out = cloneTask(t)
		return nil
	})
	return out, err
}

func hasDep(ds []Dependency, from, to string) bool {
	for _, d := range ds {
		if d.IssueID == from && d.DependsOnID == to && blockingType(d.Type) {
			return true
		}
	}
	return false
}

// edit loads id, lets fn change a copy, and writes it back.
func (s *builtinStore) edit(ctx context.Context, id string, fn func(sn *snapshot, t *Task) error) (Task, error) {
	var out Task
	err := s.mutate(ctx, func(sn *snapshot, touch func(*record, *Task)) error {
		r, err := s.find(sn, id)
		if err != nil {
			return err
		}
		before, err := sn.full(r)
		if err != nil {
			return err
		}
		t := cloneTask(before)
		if err := fn(sn, &t); err != nil {
			return err
		}
		if !reflect.DeepEqual(&t, before) {
			touch(r, &t)
		}
		out = cloneTask(&t)
		return nil
	})
	return out, err
}

// activeBlockers lists the ids holding r back, as Ready would see them.
func activeBlockers(sn *snapshot, t *Task) []string {
	var out []string
	for _, d := range t.Dependencies {
		if !blockingType(d.Type) || (d.IssueID != "" && d.IssueID != t.ID) {
			continue
		}
		if j, ok := sn.byID[d.DependsOnID]; ok && activeStatus(sn.recs[j].status) {
			out = append(out, d.DependsOnID)
		}
	}
	return out
}

func (s *builtinStore) Claim(ctx context.Context, id, actor string) (Task, error) {
	if actor == "" {
		actor = s.actor
	}
	return s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		switch {
		case t.Status == StatusInProgress && t.Assignee == actor:
			return nil // bd treats a repeat claim by the same actor as success
		case t.Status == StatusInProgress || (t.Status == StatusOpen && t.Assignee != "" && t.Assignee != actor):
			return fmt.Errorf("claiming %s: %w by %s", id, ErrClaimed, t.Assignee)
		case t.Status != StatusOpen:
			return fmt.Errorf("claiming %s: %w (status %s)", id, ErrNotOpen, t.Status)
		}
		if b := activeBlockers(sn, t); len(b) > 0 {
			return fmt.Errorf("claiming %s: %w: %s", id, ErrNotReady, strings.Join(b, ", "))
		}
		t.Status, t.Assignee = StatusInProgress, actor
		if t.StartedAt == nil {
			now := s.now()
			t.StartedAt = &now
		}
		return nil
	})
}

func (s *builtinStore) Release(ctx context.Context, id string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		t.Status, t.Assignee = StatusOpen, ""
		return nil
	})
	return err
}

func (s *builtinStore) Close(ctx context.Context, id, reason string) error {
	if reason == "" {
		reason = "Closed"
	}
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if t.Status == StatusClosed {
			return nil
		}
		// bd refuses this too ("cannot close X: blocked by open issues").
		if b := activeBlockers(sn, t); len(b) > 0 {
			return fmt.Errorf("cannot close %s: %w: blocked by open issues [%s]", id, ErrNotReady, strings.Join(b, " "))
		}
		now := s.now()
		t.Status, t.ClosedAt, t.CloseReason = StatusClosed, &now, reason
		return nil
	})
	return err
}

func (s *builtinStore) Reopen(ctx context.Context, id string) error {
	return s.mutate(ctx, func(sn *snapshot, touch func(*record, *Task)) error {
		r, err := s.find(sn, id)
		if err != nil {
			return err
		}
		// Like bd reopen (which also clears defer_until), plus the assignee
		// so the task can be claimed again.
		full, err := sn.full(r)
		if err != nil {
			return err
		}
		t := cloneTask(full)
		t.Status, t.Assignee, t.ClosedAt, t.CloseReason = StatusOpen, "", nil, ""
		r.ext().drop = map[string]bool{"defer_until": true}
		r.deferUntil = time.Time{}
		touch(r, &t)
		return nil
	})
}

func (s *builtinStore) Block(ctx context.Context, id, reason string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		t.Status = StatusBlocked
		if reason != "" {
			t.Notes = appendNote(t.Notes, reason)
		}
		return nil
	})
	return err
}

func appendNote(notes, add string) string {
	if notes == "" {
		return add
	}
	return notes + "\n" + add
}

func (s *builtinStore) AddLabel(ctx context.Context, id, label string) error {
	if label == "" {
		return errors.New("beads: empty label")
	}
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if !hasLabel(t.Labels, label) {
			t.Labels = append(t.Labels, label)
		}
		return nil
	})
	return err
}

func (s *builtinStore) RemoveLabel(ctx context.Context, id, label string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		out := t.Labels[:0:0]
		for _, l := range t.Labels {
			if l != label {
				out = append(out, l)
			}
		}
		t.Labels = out
		return nil
	})
	return err
}

func (s *builtinStore) Update(ctx context.Context, id string, u Update) (Task, error) {
	if u.Priority != nil && (*u.Priority < 0 || *u.Priority > 4) {
		return Task{}, fmt.Errorf("beads: priority %d out of range 0-4", *u.Priority)
	}
	if u.Title != nil && strings.TrimSpace(*u.Title) == "" {
		return Task{}, errors.New("beads: title is required")
	}
	return s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if u.Title != nil {
			t.Title = *u.Title
		}
		if u.Description != nil {
			t.Description = *u.Description
		}
		if u.Acceptance != nil {
			t.AcceptanceCriteria = *u.Acceptance
		}
		if u.Priority != nil {
			t.Priority = *u.Priority
		}
		if u.Notes != nil && *u.Notes != "" {
			t.Notes = appendNote(t.Notes, *u.Notes)
		}
		if len(u.Metadata) > 0 {
			if t.Metadata == nil {
				t.Metadata = map[string]any{}
			}
			for k, v := range u.Metadata {
				t.Metadata[k] = v
			}
		}
		return nil
	})
}

func (s *builtinStore) AddDependency(ctx context.Context, id, dependsOn string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if _, err := s.find(sn, dependsOn); err != nil {
			return fmt.Errorf("beads: dependency %s: %w", dependsOn, ErrNotFound)
		}
		if hasDep(t.Dependencies, id, dependsOn) {
			return nil
		}
		next := func(x string) []string {
			j, ok := sn.byID[x]
			if !ok {
				return nil
			}
			var out []string
			for _, d := range sn.recs[j].deps {
				if blockingType(d.Type) && (d.IssueID == "" || d.IssueID == x) {
					out = append(out, d.DependsOnID)
				}
			}
			return out
		}
		if c := cyclePath(id, dependsOn, next); c != "" {
			return fmt.Errorf("%w: %s", ErrCycle, c)
		}
		t.Dependencies = append(t.Dependencies, Dependency{IssueID: id, DependsOnID: dependsOn, Type: "blocks", CreatedAt: s.now(), CreatedBy: s.actor})
		return nil
	})
	return err
}
