//go:build !linux && !darwin

package testkit

import (
	"testing"
	"time"
)

// WaitExit is not implemented here: the tests that need it skip.
func WaitExit(t *testing.T, pid int, limit time.Duration) bool {
	t.Helper()
	t.Skip("waiting on a process that is not a child needs pidfd or kqueue")
	return false
}
