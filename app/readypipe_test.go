package app

import (
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestReadyPipeNotInherited: a process started while the engine holds its
// ready pipe (as its long-lived git processes are, before it listens) does
// not keep the pipe open, so `chorus` sees its end when the engine closes
// it rather than when that process exits.
func TestReadyPipeNotInherited(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// As the engine receives it: a descriptor without close-on-exec.
	fd, err := syscall.Dup(int(pw.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	pw.Close()
	ready := readyPipe(fd)
	child := exec.Command("sleep", "600")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	if _, err := io.WriteString(ready, "ok\n"); err != nil {
		t.Fatal(err)
	}
	ready.Close()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- string(b)
	}()
	select {
	case s := <-got:
		if s != "ok\n" {
			t.Fatalf("read %q", s)
		}
	case <-time.After(60 * time.Second): // fail-safe only: a passing run returns at once
		t.Fatal("the ready pipe stayed open while a child the engine started lives")
	}
}
