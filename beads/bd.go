package beads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/proc"
)

// bdStore drives the real `bd` CLI. Every call: argv only, --json, explicit
// ids after "--", BEADS_DIR pinned to the main repo's .beads, a timeout that
// kills the process group, success judged by exit code alone.
//
// bd serialises its own database access and each call costs ~0.5 s, so
// writes go through one goroutine (no point in queueing them inside bd) and
// the ready list is cached: readers get the cached list at once while one
// background refresh brings it up to date (stale-while-revalidate). Our
// own writes patch the cached list right away.
type bdStore struct {
	bin, beadsDir, repoDir, actor string
	timeout, ttl                  time.Duration

	jobs     chan func()
	quit     chan struct{}
	quitOnce sync.Once

	mu         sync.Mutex
	ready      []Task
	have       bool
	fetchedAt  time.Time
	stale      bool
	lastErr    error
	refreshing chan struct{} // non-nil while a refresh runs
	patches    []patch       // own writes since the running refresh started

	noSuggest atomic.Bool // bd lacks close --suggest-next
}

// patch applies one of our writes to a ready list. exact is false when the
// write can make tasks ready that the patch cannot know about (closing a
// blocker), so a refresh is still needed.
type patch struct {
	apply func([]Task) []Task
	exact bool
}

// maxStale bounds how long a failing bd keeps being papered over by the cache.
const maxStale = 60 * time.Second

// OpenBd opens the bd backend for beadsDir (normally from MainBeadsDir).
func OpenBd(beadsDir string, opt OpenOptions) Store {
	return openBd(beadsDir, opt)
}

func openBd(beadsDir string, opt OpenOptions) *bdStore {
	abs, _ := filepath.Abs(beadsDir)
	s := &bdStore{
		bin: opt.BdPath, beadsDir: abs, repoDir: filepath.Dir(abs), actor: opt.Actor,
		timeout: opt.Timeout, ttl: opt.ReadyTTL,
		jobs: make(chan func()), quit: make(chan struct{}),
	}
	if s.bin == "" {
		s.bin = "bd"
	}
	if s.timeout <= 0 {
		s.timeout = 120 * time.Second
	}
	if s.ttl <= 0 {
		s.ttl = 3 * time.Second
	}
	go s.writer()
	return s
}

func (s *bdStore) Backend() string { return BackendBd }

// Shutdown stops the write goroutine; later writes fail.
func (s *bdStore) Shutdown() { s.quitOnce.Do(func() { close(s.quit) }) }

func (s *bdStore) writer() {
	for {
		select {
		case j := <-s.jobs:
			j()
		case <-s.quit:
			return
		}
	}
}

var errShutdown = errors.New("beads: store shut down")

// write runs fn on the single writer goroutine.
func (s *bdStore) write(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	select {
	case s.jobs <- func() { done <- fn() }:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.quit:
		return errShutdown
	}
	return <-done
}

// BdError is a failed bd call: its exit code and the message bd gave.
type BdError struct {
	Args     []string
	ExitCode int
	Msg      string
	kind     error
}

func (e *BdError) Error() string {
	return fmt.Sprintf("bd %s: %s", e.Args[0], e.Msg)
}

func (e *BdError) Unwrap() error { return e.kind }

// run executes one bd command. actor, when set, is the claim identity.
func (s *bdStore) run(ctx context.Context, actor string, args ...string) (proc.Result, error) {
	env := []string{"BEADS_DIR=" + s.beadsDir, "BD_NON_INTERACTIVE=1"}
	if actor == "" {
		actor = s.actor
	}
	if actor != "" {
		env = append(env, "BEADS_ACTOR="+actor)
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv: append([]string{s.bin}, args...), Dir: s.repoDir, Env: env,
		Timeout: s.timeout, Grace: 500 * time.Millisecond,
	})
	if err != nil {
		if errors.Is(err, proc.ErrTimeout) {
			return res, fmt.Errorf("beads: bd %s timed out after %s (process group killed): %w", args[0], s.timeout, err)
		}
		return res, fmt.Errorf("beads: running bd %s: %w", args[0], err)
	}
	if res.ExitCode != 0 {
		return res, bdFailure(args, res)
	}
	return res, nil
}

// bdFailure takes the message from a JSON error object (stdout, or stderr
// in FatalError's --json form) or from stderr's error lines; warnings and
// other stderr noise are left out.
func bdFailure(args []string, res proc.Result) error {
	msg := jsonError(res.Stdout)
	if msg == "" {
		msg = jsonError(res.Stderr)
	}
	if msg == "" {
		var lines []string
		for _, l := range strings.Split(string(res.Stderr), "\n") {
			l = strings.TrimSpace(l)
			low := strings.ToLower(l)
			if strings.HasPrefix(low, "error") || strings.HasPrefix(low, "cannot") || strings.HasPrefix(low, "hint:") {
				lines = append(lines, l)
			}
		}
		msg = strings.Join(lines, "; ")
	}
	if msg == "" {
		for _, l := range strings.Split(strings.TrimSpace(string(res.Stderr)), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(strings.ToLower(l), "warning") {
				msg = l
			}
		}
	}
	if msg == "" {
		msg = "exit status " + strconv.Itoa(res.ExitCode)
	}
	return &BdError{Args: args, ExitCode: res.ExitCode, Msg: msg, kind: classify(msg)}
}

func jsonError(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return ""
	}
	var e struct {
		Error string `json:"error"`
		Data  struct {
			Error string `json:"error"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &e) != nil {
		return ""
	}
	if e.Error != "" {
		return e.Error
	}
	return e.Data.Error
}

func classify(msg string) error {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "already claimed"):
		return ErrClaimed
	case strings.Contains(m, "not claimable"):
		return ErrNotOpen
	case strings.Contains(m, "cycle"):
		return ErrCycle
	case strings.Contains(m, "blocked by open issues"):
		return ErrNotReady
	case strings.Contains(m, "no issue found"), strings.Contains(m, "no issues found"), strings.Contains(m, "not found"):
		return ErrNotFound
	}
	return nil
}

// unwrapJSON removes BD_JSON_ENVELOPE's {"schema_version","data"} wrapper
// if the user's environment turned it on.
func unwrapJSON(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"data"`)) {
		return b
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	if d, ok := m["data"]; ok && len(m) <= 2 {
		if _, sv := m["schema_version"]; sv || len(m) == 1 {
			return d
		}
	}
	return b
}

// bdIssue is an issue as bd prints it. dependencies come in two shapes:
// raw records (ready/list) or full issues with dependency_type (show).
type bdIssue struct {
	Task
	Dependencies []bdDep         `json:"dependencies"`
	Metadata     json.RawMessage `json:"metadata"`
}

type bdDep struct {
	IssueID        string    `json:"issue_id"`
	DependsOnID    string    `json:"depends_on_id"`
	Type           string    `json:"type"`
	CreatedAt      time.Time `json:"created_at"`
	CreatedBy      string    `json:"created_by"`
	ID             string    `json:"id"`
	DependencyType string    `json:"dependency_type"`
	Status         string    `json:"status"`
}

// task normalises an issue; blockerStatus maps each blocking dependency to
// its status when bd told us (show's shape).
func (b *bdIssue) task() (t Task, blockerStatus map[string]string) {
	t = b.Task
	t.Dependencies = nil
	for _, d := range b.Dependencies {
		if d.DependencyType != "" || (d.DependsOnID == "" && d.ID != "") {
			typ := d.DependencyType
			t.Dependencies = append(t.Dependencies, Dependency{IssueID: t.ID, DependsOnID: d.ID, Type: typ})
			if blockingType(typ) {
				if blockerStatus == nil {
					blockerStatus = map[string]string{}
				}
				blockerStatus[d.ID] = d.Status
			}
			continue
		}
		dep := Dependency{IssueID: d.IssueID, DependsOnID: d.DependsOnID, Type: d.Type, CreatedAt: d.CreatedAt.UTC(), CreatedBy: d.CreatedBy}
		if dep.IssueID == "" {
			dep.IssueID = t.ID
		}
		t.Dependencies = append(t.Dependencies, dep)
	}
	t.Metadata = decodeMeta(b.Metadata)
	normTimes(&t)
	return t, blockerStatus
}

func decodeMeta(raw json.RawMessage) map[string]any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' { // some bd versions print metadata as a JSON string
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		raw = []byte(s)
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}

func parseIssues(out []byte) ([]bdIssue, error) {
	out = unwrapJSON(out)
	if len(out) == 0 {
		return nil, nil
	}
	var list []bdIssue
	if out[0] == '{' {
		var one bdIssue
		if err := json.Unmarshal(out, &one); err != nil {
			return nil, fmt.Errorf("beads: reading bd output: %w", err)
		}
		return []bdIssue{one}, nil
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("beads: reading bd output: %w", err)
	}
	return list, nil
}

func toTasks(list []bdIssue) []Task {
	out := make([]Task, len(list))
	for i := range list {
		out[i], _ = list[i].task()
	}
	return out
}

// show fetches one issue with its blockers' statuses.
func (s *bdStore) show(ctx context.Context, id string) (Task, map[string]string, error) {
	res, err := s.run(ctx, "", "show", "--json", "--", id)
	if err != nil {
		return Task{}, nil, err
	}
	list, err := parseIssues(res.Stdout)
	if err != nil {
		return Task{}, nil, err
	}
	for i := range list {
		if list[i].ID == id {
			t, bs := list[i].task()
			return t, bs, nil
		}
	}
	if len(list) == 1 {
		t, bs := list[0].task()
		return t, bs, nil
	}
	return Task{}, nil, fmt.Errorf("%w: %s", ErrNotFound, id)
}

func (s *bdStore) Get(ctx context.Context, id string) (Task, error) {
	t, _, err := s.show(ctx, id)
	return t, err
}

func (s *bdStore) List(ctx context.Context) ([]Task, error) {
	res, err := s.run(ctx, "", "list", "--json", "--all", "--limit=0")
	if err != nil {
		return nil, err
	}
	list, err := parseIssues(res.Stdout)
	if err != nil {
		return nil, err
	}
	return toTasks(list), nil
}

func (s *bdStore) fetchReady(ctx context.Context) ([]Task, error) {
	res, err := s.run(ctx, "", "ready", "--json", "--limit=0")
	if err != nil {
		return nil, err
	}
	list, err := parseIssues(res.Stdout)
	if err != nil {
		return nil, err
	}
	ts := toTasks(list)
	sortReady(ts)
	return ts, nil
}

// Ready serves the cached list, refreshing it in the background when it is
// older than the TTL or our writes made it inexact. Only the very first
// call waits for bd.
func (s *bdStore) Ready(ctx context.Context, opt ReadyOptions) ([]Task, error) {
	s.mu.Lock()
	if !s.have {
		ch := s.refreshLocked()
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		if !s.have {
			err := s.lastErr
			s.mu.Unlock()
			return nil, err
		}
	} else if s.stale || time.Since(s.fetchedAt) > s.ttl {
		s.refreshLocked()
		if s.lastErr != nil && time.Since(s.fetchedAt) > maxStale {
			err := s.lastErr
			s.mu.Unlock()
			return nil, fmt.Errorf("beads: ready list is %s old and refreshing it fails: %w", time.Since(s.fetchedAt).Round(time.Second), err)
		}
	}
	out := make([]Task, 0, len(s.ready))
	for i := range s.ready {
		if labelsPass(s.ready[i].Labels, opt) {
			out = append(out, cloneTask(&s.ready[i]))
		}
	}
	s.mu.Unlock()
	return out, nil
}

// Refresh fetches the ready list now and waits for it.
func (s *bdStore) Refresh(ctx context.Context) error {
	for {
		s.mu.Lock()
		ch := s.refreshLocked()
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
		stale, err := s.stale, s.lastErr
		s.mu.Unlock()
		// A refresh already running when we asked may predate our writes.
		if err != nil || !stale {
			return err
		}
	}
}

func (s *bdStore) refreshLocked() chan struct{} {
	if s.refreshing != nil {
		return s.refreshing
	}
	ch := make(chan struct{})
	s.refreshing = ch
	s.patches = nil
	go func() {
		ts, err := s.fetchReady(context.Background())
		s.mu.Lock()
		if err != nil {
			s.lastErr = err
		} else {
			stale := false
			for _, p := range s.patches {
				ts = p.apply(ts)
				stale = stale || !p.exact
			}
			s.ready, s.have, s.fetchedAt, s.stale, s.lastErr = ts, true, time.Now(), stale, nil
		}
		s.refreshing, s.patches = nil, nil
		s.mu.Unlock()
		close(ch)
	}()
	return ch
}

// applyPatch records one of our writes in the cache (and in the refresh
// that may be running, whose data may predate the write).
func (s *bdStore) applyPatch(p patch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.have {
		s.ready = p.apply(s.ready)
		if !p.exact {
			s.stale = true
		}
	}
	if s.refreshing != nil {
		s.patches = append(s.patches, p)
	}
}

func without(id string) func([]Task) []Task {
	return func(ts []Task) []Task {
		return slices.DeleteFunc(ts, func(t Task) bool { return t.ID == id })
	}
}

func (s *bdStore) cachedReady(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.have && slices.ContainsFunc(s.ready, func(t Task) bool { return t.ID == id })
}

func firstIssue(res proc.Result, id string) (Task, error) {
	list, err := parseIssues(res.Stdout)
	if err != nil {
		return Task{}, err
	}
	if len(list) == 0 {
		return Task{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	t, _ := list[0].task()
	return t, nil
}

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
		// bd's update --claim ignores blockers, so check readiness first:
		// from the ready cache when it lists the task, else via show.
		if !s.cachedReady(id) {
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
		}
		res, err := s.run(ctx, actor, "update", "--claim", "--actor="+actor, "--json", "--", id)
		if err != nil {
			return err
		}
		if out, err = firstIssue(res, id); err != nil {
			return err
		}
		// Concurrent claims have been seen to hand one issue to two
		// callers, each told it won: believe what bd stores, not what it
		// answered.
		t, _, err := s.show(ctx, id)
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
