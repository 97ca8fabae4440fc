package merge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

// Service is the merge queue (items, stats, their bookkeeping and what
// callers ask of it) composed with its integrator (which takes items and
// lands them, on Run's goroutine), its resolvers and its cleaner (each on
// goroutines of their own). Every method but Run is safe from any
// goroutine.
type Service struct {
	opt       Options
	persist   Persist
	commonDir string
	// in does the work on the repository: objects, refs, candidates.
	in *integrator
	// res settles conflicts and failing candidates (resolve.go).
	res      conflicts
	required []config.QualityCommand
	maxTries int

	mu        sync.Mutex
	items     []*Item
	stats     Stats
	current   string
	curFence  uint64 // the current item's Fence when the integrator took it
	draining  bool
	reconcile bool
	snap      atomic.Pointer[Snapshot]
	sincePack int                        // landings since the refs were last packed
	batch     map[string]bool            // the items of the batch the integrator holds
	solo      map[string]bool            // items to be processed alone (batch.go)
	checking  map[string]time.Time       // tasks in their checks, about to queue, since (gather.go)
	checkLen  time.Duration              // the last passing check's length in a worktree (gather.go)
	freeAt    time.Time                  // when the integrator last released an item (gather.go)
	checkRun  batchCheck                 // the held batch's check, which newcomers may restart (join.go)
	landWait  map[string][]chan struct{} // Landing's channels, by task (landwait.go)
	stopped   bool                       // Run returned: no landing is coming

	// The locks below and mu above are taken in the order locks.go gives
	// (TestLockOrder holds it).
	//
	// opMu serialises everything that moves the target: the integrator's item
	// processing and rollbacks.
	opMu sync.Mutex
	// fenceMu makes a resolver's stop and a landing exclusive: a landing
	// checks the item's fence, moves the target and records "landed" while
	// holding it, so a stop either comes first (nothing lands) or finds
	// the item landed.
	fenceMu sync.Mutex
	// bg counts the cleaner's goroutine; Run waits for it.
	bg sync.WaitGroup

	wake chan struct{}
	// baseline is closed once Run has taken the target's tip as its
	// baseline (or returned): a move of the target before that would be
	// taken for the baseline, not held.
	baseline     chan struct{}
	baselineOnce sync.Once
	clean        *cleaner // cleans up after landings, on a goroutine of its own
	changed      chan struct{}
	events       chan Event
	// emitted and dropped count events put on events and dropped from it
	// unread, so a reader can tell none is still in transit (Delivered).
	emitted, dropped atomic.Uint64

	// wtMu guards wtCache, the worktrees' git dirs as last read (git.go).
	wtMu    sync.Mutex
	wtCache map[string]gitDirEntry

	// hook is called at phase boundaries (crash tests stop the process there).
	hook func(phase string)
}

// Phases at which the integrator reports progress to the hook.
const (
	PhasePrecheck  = "precheck"
	PhaseCandidate = "candidate" // candidate commit and ref written
	PhaseTesting   = "testing"   // quality commands passed
	PhaseLanding   = "landing"   // "landing" persisted, ref not yet updated
	PhaseCAS       = "cas"       // target updated, "landed" not yet persisted
	PhaseLanded    = "landed"    // "landed" persisted, cleanup not yet done
)

// New prepares a service for the repository: checks git, registers the merge
// drivers where merge-tree honours them, and keeps Chorus's worktrees out of
// the user's `git status`. The integration worktree is created by Run.
func New(opt Options, persist Persist, resolver Resolver) (*Service, error) {
	if opt.RepoDir == "" || opt.Target == "" {
		return nil, errors.New("merge: RepoDir and Target are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, v, err := gitx.Version(ctx)
	if err != nil {
		return nil, err
	}
	if !gitx.AtLeast(v, gitx.MinVersion) {
		return nil, fmt.Errorf("merge: git %d.%d is too old (merge-tree --write-tree needs 2.38)", v[0], v[1])
	}
	root, err := filepath.Abs(opt.RepoDir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	opt.RepoDir = root
	if opt.WorktreesDir == "" {
		opt.WorktreesDir = filepath.Join(root, ".worktrees")
	}
	if opt.Worktrees == nil {
		// One of its own would have a lock of its own: git fails when
		// the engine's and the service's worktree adds overlap.
		return nil, errors.New("merge: Options.Worktrees is required: pass the repository's one worktree.Manager, the one the engine's agents use")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxDiff <= 0 {
		opt.MaxDiff = 64 << 10
	}
	if opt.ResolverTimeout <= 0 {
		opt.ResolverTimeout = opt.Merge.ResolverTimeout()
		if opt.ResolverTimeout <= 0 {
			opt.ResolverTimeout = 10 * time.Minute
		}
	}
	if opt.PackRefsEvery <= 0 {
		opt.PackRefsEvery = 64
	}
	if opt.WatchInterval <= 0 {
		opt.WatchInterval = 2 * time.Second
	}
	if opt.GatherWindow == 0 {
		opt.GatherWindow = defaultGatherWindow
	}
	if opt.AcceptCommand == "" {
		opt.AcceptCommand = "chorus merge accept-target"
	}
	common, err := gitx.CommonDir(ctx, root)
	if err != nil {
		return nil, err
	}
	if common == "" {
		return nil, fmt.Errorf("merge: %s is not in a git repository", root)
	}
	objs := gitx.OpenObjects(root)
	objs.SetDurable(!opt.NoFsync)
	s := &Service{
		opt: opt, persist: persist, commonDir: common,
		in: &integrator{repoDir: root, commonDir: common, target: opt.Target, noFsync: opt.NoFsync,
			integ: filepath.Join(opt.WorktreesDir, "_integration"),
			refs:  gitx.NewRefUpdater(root, fsyncConfig(opt.NoFsync)...),
			objs:  objs},
		wake:     make(chan struct{}, 1),
		baseline: make(chan struct{}),
		changed:  make(chan struct{}, 1),
		events:   make(chan Event, 256),
	}
	s.in.q = s
	s.res = newResolvers(s, resolver)
	// poke after each batch: Run decides whether the queue is idle now.
	s.clean = newCleaner(s.nextCleanups, s.cleanup, s.poke)
	s.maxTries = opt.Merge.MaxAttempts
	if s.maxTries <= 0 {
		s.maxTries = 3
	}
	for _, q := range sortedQuality(opt.Quality) {
		if q.Required {
			s.required = append(s.required, q)
		}
	}
	if err := s.registerDrivers(ctx); err != nil {
		return nil, err
	}
	if err := opt.Worktrees.Exclude(ctx, opt.WorktreesDir); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.publishLocked()
	s.mu.Unlock()
	return s, nil
}

func sortedQuality(q []config.QualityCommand) []config.QualityCommand {
	q = append([]config.QualityCommand(nil), q...)
	sort.SliceStable(q, func(i, j int) bool { return q[i].Order < q[j].Order })
	return q
}

// Run is the service at work until ctx ends (or, after Drain, until the
// queue is idle): the cleaner on a goroutine of its own, and the
// integrator, which takes items from the queue and lands them one at a
// time, on Run's.
func (s *Service) Run(ctx context.Context) error {
	defer s.baselineTaken()
	s.mu.Lock()
	s.stopped = false
	s.mu.Unlock()
	defer s.stop()
	if err := s.ensureIntegration(ctx); err != nil {
		return err
	}
	defer s.in.refs.Close()
	defer s.in.objs.Close()
	// Resolver goroutines end with ctx; their clean-up runs before Run
	// returns, so nothing touches the repository afterwards.
	defer s.res.wait()
	defer s.bg.Wait()
	// Landed items are cleaned up beside the integrator (removing a
	// worktree waits on the worktree lock agents' starts hold), so the
	// next merge does not wait for the last one's clean-up.
	stop := make(chan struct{})
	defer close(stop)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.clean.run(ctx, stop)
	}()
	return s.in.run(ctx)
}

// Baseline is closed once Run has read the target's tip it judges later
// moves against, or has returned. Agents that could move the target wait
// for it: a move before the baseline would pass for it and go unnoticed.
func (s *Service) Baseline() <-chan struct{} { return s.baseline }

func (s *Service) baselineTaken() { s.baselineOnce.Do(func() { close(s.baseline) }) }

func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) emit(e Event) {
	if e.Time.IsZero() {
		e.Time = s.opt.Now()
	}
	s.emitted.Add(1) // before the send: a reader never sees more than was emitted
	for {
		select {
		case s.events <- e:
			return
		default:
		}
		// Full: drop the oldest so the integrator never blocks on a slow reader.
		select {
		case <-s.events:
			s.dropped.Add(1)
		default:
		}
	}
}
