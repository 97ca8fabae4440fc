//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"time"
)

// waitCPU needs /proc to read the engine's own CPU time; elsewhere the
// benchmark reports wall time and git processes only.
func waitCPU(cmd *exec.Cmd) (time.Duration, error, error) {
	return 0, errors.New("the engine's CPU time is read from /proc: run the benchmark on Linux"), cmd.Wait()
}
