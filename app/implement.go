package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/chorus-dev/chorus/beads"
)

// runImplementation starts the engine with a front end.
func runImplementation(ctx context.Context, p *project, s beads.Store, o *runOptions, ready int, stderr io.Writer) error {
	fmt.Fprintf(stderr, "%d task(s) ready; mode %s, up to %d agents.\n", ready, p.cfg.Mode, p.cfg.Agents.MaxParallel)
	return withCode(ExitFailure, errors.New("this build cannot run agents yet: implementation mode is not available; use `chorus task ready` to see the queue"))
}
