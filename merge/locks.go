package merge

// Lock order. A goroutine that holds more than one of the service's locks
// took them in this order, never the other way round, and takes none of
// them again while holding it (Go's mutexes are not reentrant):
//
//	opMu             everything that moves the target: the integrator's item,
//	                 rollbacks, accepting the target, the idle watch
//	fenceMu          a landing against a resolver's stop
//	mu               the queue: items, stats, the integrator's current item
//	jobMu            the resolver agents at work (resolvers)
//	memMu            what the integrator remembers of its commits
//	wtMu             the worktrees' git dirs as last read (git.go)
//
// The worktree owner's locks (Options.Worktrees, shared with the engine)
// come after all of these: they are taken only inside its methods, which
// never call back into the service.
//
// TestLockOrder reads this package's source and fails when a function, or
// a method of the service, its integrator or its resolvers it calls, takes
// them out of this order.
var lockOrder = []string{"opMu", "fenceMu", "mu", "jobMu", "memMu", "wtMu"}
