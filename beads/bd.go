package beads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
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

	// backoff is the wait before each new try of a call a shared Dolt
	// server refused with a serialization failure (jitter added).
	backoff []time.Duration
}

// conflictBackoff: five more tries over about 1.5 s, enough for a few
// writers racing on one row; a claim that still conflicts counts as lost.
var conflictBackoff = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

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
		backoff: conflictBackoff,
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

// run executes one bd command. actor, when set, is the claim identity. A
// serialization failure from a shared Dolt server wrote nothing: the call
// is made again after a short, jittered wait, up to len(s.backoff) times.
func (s *bdStore) run(ctx context.Context, actor string, args ...string) (proc.Result, error) {
	for try := 0; ; try++ {
		res, err := s.runOnce(ctx, actor, args...)
		if !errors.Is(err, ErrConflict) || try >= len(s.backoff) {
			return res, err
		}
		wait := s.backoff[try]
		wait += time.Duration(rand.Int64N(int64(wait)/2 + 1))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, err
		}
	}
}

func (s *bdStore) runOnce(ctx context.Context, actor string, args ...string) (proc.Result, error) {
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
