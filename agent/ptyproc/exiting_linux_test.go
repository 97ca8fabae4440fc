package ptyproc

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// A running process is not exiting; one killed is, already as a zombie
// nobody has reaped (its flags stay), while Alive says the same only from
// then on.
func TestExitingAfterKill(t *testing.T) {
	if Exiting(os.Getpid()) {
		t.Fatal("this test's own process reads as exiting")
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if Exiting(pid) {
		t.Fatal("a sleeping child reads as exiting")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Exited, not reaped: a zombie until Wait below.
	if !testkit.WaitExit(t, pid, 30*time.Second) {
		t.Fatal("the killed child did not exit")
	}
	if !Exiting(pid) {
		t.Fatal("a killed child, not yet reaped, does not read as exiting")
	}
	_ = cmd.Wait()
	if Exiting(pid) {
		t.Fatal("a reaped child's pid reads as exiting")
	}
}
