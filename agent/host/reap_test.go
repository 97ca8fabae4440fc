package host

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// A host this process started is reaped once it ends: no zombie is left
// for the engine's life.
func TestEndedHostIsReaped(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	reap(cmd.Process)
	if !testkit.WaitExit(t, pid, 30*time.Second) {
		t.Fatal("the process did not end")
	}
	reapEnded() // as its SIGCHLD does, if it has not already
	var ws syscall.WaitStatus
	if n, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err != syscall.ECHILD {
		t.Fatalf("Wait4 = %d, %v: the ended process was not reaped", n, err)
	}
}
