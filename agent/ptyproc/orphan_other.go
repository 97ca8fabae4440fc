//go:build !linux && !darwin

package ptyproc

import (
	"errors"
	"time"
)

// Elsewhere there is no start time to tell a process from a later one with
// the same pid, so a process left by a Chorus that died is never taken
// for one of its agents: recovery leaves it alone rather than risk ending
// an unrelated process.

// StartTimeOf is not available on this system.
func StartTimeOf(pid int) (uint64, error) {
	return 0, errors.New("ptyproc: process start times are not available on this system")
}

// Alive reports false: without start times a pid cannot be vouched for.
func Alive(pid int, startTime uint64) bool { return false }

// StopOrphan does nothing here (see Alive) and reports false.
func StopOrphan(pid int, startTime uint64, grace time.Duration) bool { return false }

// ParentOf is not available on this system.
func ParentOf(pid int) (int, error) {
	return 0, errors.New("ptyproc: process parents are not available on this system")
}

// Exiting reports whether pid has begun to exit; here only a zombie
// (Alive) says so.
func Exiting(pid int) bool { return false }
