package proc

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunArgvNotShell(t *testing.T) {
	// A shell would expand $(...) and split on ';'.
	arg := "$(echo pwned); echo x 'q\"\n../"
	r, err := Run(context.Background(), Spec{Argv: []string{"printf", "%s", arg}})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != arg || r.ExitCode != 0 {
		t.Fatalf("got %q rc=%d", r.Stdout, r.ExitCode)
	}
}

func TestRunExitCodeIsNotError(t *testing.T) {
	r, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo oops >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 3 || FirstLine(r.Stderr) != "oops" {
		t.Fatalf("rc=%d stderr=%q", r.ExitCode, r.Stderr)
	}
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	// The child ignores SIGTERM and leaves a grandchild holding stdout.
	script := `trap '' TERM; sleep 300 & echo started; wait`
	// On a busy machine the timeout may come before the script got as
	// far as its grandchild: it is given twice as long until it did.
	for timeout := 300 * time.Millisecond; ; timeout *= 2 {
		r, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, Timeout: timeout, Grace: 100 * time.Millisecond})
		if !errors.Is(err, ErrTimeout) || !r.TimedOut {
			t.Fatalf("want timeout, got %v", err)
		}
		if strings.Contains(string(r.Stdout), "started") {
			return
		}
		if timeout > time.Minute {
			t.Fatalf("stdout %q", r.Stdout)
		}
	}
}

func TestRunMissingBinary(t *testing.T) {
	_, err := Run(context.Background(), Spec{Argv: []string{"/nonexistent/chorus-nothing"}})
	if err == nil {
		t.Fatal("want error")
	}
}

func TestOutputCapped(t *testing.T) {
	r, err := Run(context.Background(), Spec{Argv: []string{"head", "-c", "100000", "/dev/zero"}, MaxOutput: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) != 1000 {
		t.Fatalf("len %d", len(r.Stdout))
	}
}

func TestRunMissingDirSaysSo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	_, err := Run(context.Background(), Spec{Argv: []string{"true"}, Dir: dir})
	if !errors.Is(err, ErrNoDir) || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("got %v", err)
	}
}
