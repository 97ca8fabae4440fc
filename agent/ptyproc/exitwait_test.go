package ptyproc

import (
	"os/exec"
	"testing"
)

// awaitExit returns once the child has ended and leaves it to Wait,
// which still gets its exit code.
func TestAwaitExitLeavesTheChildToWait(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; exit 7")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		awaitExit(cmd.Process.Pid)
		close(done)
	}()
	in.Close() // the child reads EOF and ends
	<-done
	if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("Wait = %v, %v; want exit code 7", err, cmd.ProcessState)
	}
}
