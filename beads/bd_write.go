package beads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

var warnDep = []string{"warn", "fail", "depend"}

func (s *bdStore) Create(ctx context.Context, title string, opt CreateOptions) (Task, error) {
	if strings.TrimSpace(title) == "" {
		return Task{}, errors.New("beads: title is required")
	}
	prio := opt.priority()
	if prio < 0 || prio > 4 {
		return Task{}, fmt.Errorf("beads: priority %d out of range 0-4", prio)
	}
	typ := opt.Type
	if typ == "" {
		typ = "task"
	}
	args := []string{"create", "--json", "--title=" + title, "--priority=" + strconv.Itoa(prio), "--type=" + typ}
	if opt.ID != "" {
		args = append(args, "--id="+opt.ID)
	}
	if opt.Description != "" {
		args = append(args, "--description="+opt.Description)
	}
	if opt.Acceptance != "" {
		args = append(args, "--acceptance="+opt.Acceptance)
	}
	for _, l := range opt.Labels {
		if strings.Contains(l, ",") {
			return Task{}, fmt.Errorf("beads: label %q contains a comma", l)
		}
	}
	if len(opt.Labels) > 0 {
		args = append(args, "--labels="+strings.Join(opt.Labels, ","))
	}
	for _, d := range opt.Deps {
		if strings.ContainsAny(d, ",:") {
			return Task{}, fmt.Errorf("beads: dependency id %q contains ',' or ':'", d)
		}
	}
	if len(opt.Deps) > 0 {
		args = append(args, "--deps="+strings.Join(opt.Deps, ","))
	}
	if opt.Model != "" || opt.Agent != "" {
		m := map[string]string{}
		if opt.Model != "" {
			m[MetaModel] = opt.Model
		}
		if opt.Agent != "" {
			m[MetaAgent] = opt.Agent
		}
		b, _ := json.Marshal(m)
		args = append(args, "--metadata="+string(b))
	}
	var out Task
	err := s.write(ctx, func() error {
		res, err := s.run(ctx, "", args...)
		if err != nil {
			return err
		}
		out, err = firstIssue(res, "")
		if err != nil {
			return err
		}
		// create does not echo labels or deps: they are added afterwards,
		// and failures there are only stderr warnings with exit 0.
		out.Labels = slices.Clone(opt.Labels)
		for _, d := range opt.Deps {
			out.Dependencies = append(out.Dependencies, Dependency{IssueID: out.ID, DependsOnID: d, Type: "blocks", CreatedAt: out.CreatedAt})
		}
		low := strings.ToLower(string(res.Stderr))
		suspicious := false
		for _, w := range warnDep {
			suspicious = suspicious || strings.Contains(low, w)
		}
		if len(opt.Deps) == 0 || !suspicious {
			return nil
		}
		got, _, err := s.show(ctx, out.ID)
		if err != nil {
			return fmt.Errorf("beads: created %s but could not check its dependencies: %w", out.ID, err)
		}
		out = got
		var missing []string
		for _, d := range opt.Deps {
			if !slices.ContainsFunc(got.Dependencies, func(x Dependency) bool { return x.DependsOnID == d }) {
				missing = append(missing, d)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		why := warningFor(res.Stderr, missing[0])
		err = fmt.Errorf("beads: created %s but bd did not add its dependency on %s (%s): %w",
			out.ID, strings.Join(missing, ", "), why, ErrDependency)
		if classify(why) == ErrNotFound {
			err = fmt.Errorf("%w: %w", err, ErrNotFound)
		}
		return err
	})
	if err != nil && out.ID == "" {
		return Task{}, err
	}
	if out.ID != "" {
		t := out
		if len(t.BlockedBy()) == 0 && t.Status == StatusOpen {
			s.applyPatch(patch{apply: func(ts []Task) []Task {
				ts = append(without(t.ID)(ts), t)
				sortReady(ts)
				return ts
			}, exact: true})
		} else {
			s.applyPatch(patch{apply: without(t.ID), exact: false})
		}
	}
	return out, err
}

func warningFor(stderr []byte, dep string) string {
	var any string
	for _, l := range strings.Split(string(stderr), "\n") {
		l = strings.TrimSpace(l)
		low := strings.ToLower(l)
		if !strings.Contains(low, "warn") && !strings.Contains(low, "fail") {
			continue
		}
		if strings.Contains(l, dep) {
			return l
		}
		if any == "" && strings.Contains(low, "depend") {
			any = l
		}
	}
	if any == "" {
		any = "no warning text"
	}
	return any
}

func (s *bdStore) Claim(ctx context.Context, id, actor string) (Task, error) {
	if actor == "" {
		actor = s.actor
	}
	var out Task
	err := s.write(ctx, func() error {
		// bd's update --claim ignores blockers, so check readiness first,
		// always from the store itself: a cached ready list can be seconds
		// behind another Chorus's claim.
		t, blockers, err := s.show(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case t.Status == StatusInProgress && t.Assignee == actor:
			out = t
			return nil
		case t.Status == StatusInProgress || (t.Status == StatusOpen && t.Assignee != "" && t.Assignee != actor):
			return fmt.Errorf("claiming %s: %w by %s", id, ErrClaimed, t.Assignee)
		case t.Status != StatusOpen:
			return fmt.Errorf("claiming %s: %w (status %s)", id, ErrNotOpen, t.Status)
		}
		var open []string
		for b, st := range blockers {
			if activeStatus(st) {
				open = append(open, b)
			}
		}
		if len(open) > 0 {
			slices.Sort(open)
			return fmt.Errorf("claiming %s: %w: %s", id, ErrNotReady, strings.Join(open, ", "))
		}
		res, err := s.run(ctx, actor, "update", "--claim", "--actor="+actor, "--json", "--", id)
		if errors.Is(err, ErrConflict) {
			// Still conflicting after the retries: another writer keeps
			// winning; the task is theirs as far as this claim goes.
			return fmt.Errorf("claiming %s: %w (lost the race: %w)", id, ErrClaimed, err)
		}
		if err != nil {
			return err
		}
		if out, err = firstIssue(res, id); err != nil {
			return err
		}
		// Concurrent claims have been seen to hand one issue to two
		// callers, each told it won: believe what bd stores, not what it
		// answered.
		t, _, err = s.show(ctx, id)
		if err != nil {
			return fmt.Errorf("claiming %s: reading the claim back: %w", id, err)
		}
		if t.Assignee != actor || t.Status != StatusInProgress {
			return fmt.Errorf("claiming %s: %w by %s (bd reported the claim as ours, but stores %s, %s)", id, ErrClaimed, t.Assignee, t.Assignee, t.Status)
		}
		out = t
		return nil
	})
	s.applyPatch(patch{apply: without(id), exact: true})
	return out, err
}

// simple runs one write command and patches the cache.
func (s *bdStore) simple(ctx context.Context, p patch, args ...string) error {
	err := s.write(ctx, func() error {
		_, err := s.run(ctx, "", args...)
		return err
	})
	if err == nil {
		s.applyPatch(p)
	}
	return err
}

func (s *bdStore) Release(ctx context.Context, id string) error {
	return s.simple(ctx, patch{apply: without(id)}, "update", "--status=open", "--assignee=", "--json", "--", id)
}

// Close asks bd which issues the close unblocked (--suggest-next), so the
// cached ready list stays exact without a refresh when there are none.
func (s *bdStore) Close(ctx context.Context, id, reason string) error {
	if reason == "" {
		reason = "Closed"
	}
	p := patch{apply: without(id)}
	err := s.write(ctx, func() error {
		if !s.noSuggest.Load() {
			res, err := s.run(ctx, "", "close", "--suggest-next", "--reason="+reason, "--json", "--", id)
			var be *BdError
			if errors.As(err, &be) && strings.Contains(be.Msg, "unknown flag") {
				s.noSuggest.Store(true) // an older bd; fall through
			} else {
				if err == nil {
					p = closePatch(id, res.Stdout)
				}
				return err
			}
		}
		_, err := s.run(ctx, "", "close", "--reason="+reason, "--json", "--", id)
		return err
	})
	if err == nil {
		s.applyPatch(p)
	}
	return err
}

// closePatch removes id and adds the issues bd reports unblocked. Those
// come without labels or dependencies, so adding any still calls for a
// refresh; adding none is exact.
func closePatch(id string, out []byte) patch {
	var r struct {
		Unblocked *[]bdIssue `json:"unblocked"`
	}
	if json.Unmarshal(unwrapJSON(out), &r) != nil || r.Unblocked == nil {
		return patch{apply: without(id)}
	}
	add := toTasks(*r.Unblocked)
	return patch{apply: func(ts []Task) []Task {
		ts = without(id)(ts)
		for _, t := range add {
			if t.Status == StatusOpen {
				ts = append(without(t.ID)(ts), t)
			}
		}
		sortReady(ts)
		return ts
	}, exact: len(add) == 0}
}

func (s *bdStore) Reopen(ctx context.Context, id string) error {
	err := s.write(ctx, func() error {
		res, err := s.run(ctx, "", "reopen", "--json", "--", id)
		if err != nil {
			return err
		}
		// bd reopen keeps the assignee, which would block every claim.
		t, err := firstIssue(res, id)
		if err == nil && t.Assignee == "" {
			return nil
		}
		_, err = s.run(ctx, "", "update", "--assignee=", "--json", "--", id)
		return err
	})
	if err == nil {
		s.applyPatch(patch{apply: without(id)})
	}
	return err
}

func (s *bdStore) Block(ctx context.Context, id, reason string) error {
	args := []string{"update", "--status=blocked"}
	if reason != "" {
		args = append(args, "--append-notes="+reason)
	}
	return s.simple(ctx, patch{apply: without(id), exact: true}, append(args, "--json", "--", id)...)
}

func relabel(id string, fn func([]string) []string) func([]Task) []Task {
	return func(ts []Task) []Task {
		for i := range ts {
			if ts[i].ID == id {
				ts[i].Labels = fn(slices.Clone(ts[i].Labels))
			}
		}
		return ts
	}
}

func (s *bdStore) AddLabel(ctx context.Context, id, label string) error {
	if label == "" {
		return errors.New("beads: empty label")
	}
	return s.labelOp(ctx, "add", id, label, patch{apply: relabel(id, func(ls []string) []string {
		if !hasLabel(ls, label) {
			ls = append(ls, label)
		}
		return ls
	}), exact: true})
}

func (s *bdStore) RemoveLabel(ctx context.Context, id, label string) error {
	return s.labelOp(ctx, "remove", id, label, patch{apply: relabel(id, func(ls []string) []string {
		return slices.DeleteFunc(ls, func(l string) bool { return l == label })
	}), exact: true})
}

// labelOp runs `bd label add|remove` and believes it only when bd's
// answer lists the issue: bd 1.0.5 exits 0 for an id it cannot find,
// printing `[]` and the error on stderr.
func (s *bdStore) labelOp(ctx context.Context, op, id, label string, p patch) error {
	args := []string{"label", op, "--json", "--", id, label}
	err := s.write(ctx, func() error {
		res, err := s.run(ctx, "", args...)
		if err != nil {
			return err
		}
		var got []struct {
			IssueID string `json:"issue_id"`
		}
		if err := json.Unmarshal(unwrapJSON(res.Stdout), &got); err != nil {
			return &BdError{Args: args, Msg: fmt.Sprintf("unreadable answer %q: %v", bytes.TrimSpace(res.Stdout), err)}
		}
		for _, g := range got {
			if g.IssueID == id {
				return nil
			}
		}
		// Exit 0 but nothing done: the reason is on stderr.
		f := bdFailure(args, res).(*BdError)
		if f.kind == nil {
			f.kind = ErrNotFound
		}
		if f.Msg == "exit status 0" {
			f.Msg = "bd reported no label change for " + id
		}
		return f
	})
	if err == nil {
		s.applyPatch(p)
	}
	return err
}

func (s *bdStore) Update(ctx context.Context, id string, u Update) (Task, error) {
	if u.Priority != nil && (*u.Priority < 0 || *u.Priority > 4) {
		return Task{}, fmt.Errorf("beads: priority %d out of range 0-4", *u.Priority)
	}
	if u.Title != nil && strings.TrimSpace(*u.Title) == "" {
		return Task{}, errors.New("beads: title is required")
	}
	args := []string{"update"}
	if u.Title != nil {
		args = append(args, "--title="+*u.Title)
	}
	if u.Description != nil {
		args = append(args, "--description="+*u.Description)
	}
	if u.Acceptance != nil {
		args = append(args, "--acceptance="+*u.Acceptance)
	}
	if u.Priority != nil {
		args = append(args, "--priority="+strconv.Itoa(*u.Priority))
	}
	if u.Notes != nil && *u.Notes != "" {
		args = append(args, "--append-notes="+*u.Notes)
	}
	if len(u.Metadata) > 0 {
		b, err := json.Marshal(u.Metadata)
		if err != nil {
			return Task{}, err
		}
		args = append(args, "--metadata="+string(b))
	}
	if len(args) == 1 {
		return s.Get(ctx, id)
	}
	var out Task
	err := s.write(ctx, func() error {
		res, err := s.run(ctx, "", append(args, "--json", "--", id)...)
		if err != nil {
			return err
		}
		out, err = firstIssue(res, id)
		return err
	})
	if err != nil {
		return Task{}, err
	}
	got := out
	s.applyPatch(patch{apply: func(ts []Task) []Task {
		for i := range ts {
			if ts[i].ID == id {
				labels, deps := ts[i].Labels, ts[i].Dependencies
				ts[i] = cloneTask(&got)
				ts[i].Labels, ts[i].Dependencies = labels, deps
			}
		}
		sortReady(ts)
		return ts
	}, exact: true})
	return out, nil
}

func (s *bdStore) AddDependency(ctx context.Context, id, dependsOn string) error {
	err := s.write(ctx, func() error {
		_, err := s.run(ctx, "", "dep", "add", "--json", "--", id, dependsOn)
		return err
	})
	if errors.Is(err, ErrCycle) {
		// bd does not say which cycle; name it from the current graph.
		if all, lerr := s.List(ctx); lerr == nil {
			deps := map[string][]string{}
			for _, t := range all {
				deps[t.ID] = t.BlockedBy()
			}
			if c := cyclePath(id, dependsOn, func(x string) []string { return deps[x] }); c != "" {
				return fmt.Errorf("%w: %s (%v)", ErrCycle, c, err)
			}
		}
		return err
	}
	if err == nil {
		s.applyPatch(patch{apply: without(id)})
	}
	return err
}
