package app

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopSignalEndsStuckShutdown stops the real binary while its shutdown
// cannot finish: git hangs when the engine commits the stopped agent's
// work. SIGTERM must still end the process once completion.shutdownGraceSeconds
// has passed, with exit code 130 and a message saying what happened.
func TestStopSignalEndsStuckShutdown(t *testing.T) {
	dir := scriptedProject(t, `
write wip.txt "work nobody committed"
signal PROGRESS 10
hang
`, func(cfg map[string]any) {
		c := cfg["completion"].(map[string]any)
		c["stopGraceSeconds"] = 1
		c["shutdownGraceSeconds"] = 3
	})
	if r := chorus(t, dir, "task", "create", "stuck at shutdown"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	// A git that never finishes the engine's WIP commit (the only
	// `commit --no-verify` before anything merges).
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	pids := filepath.Join(shim, "pids")
	script := "#!/bin/sh\ncase \" $* \" in *\" commit \"*\"--no-verify\"*) echo $$ >> " + pids + "; exec sleep 600;; esac\nexec " + realGit + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	// Without the last-resort exit the process would sit in git's own
	// 2-minute timeout: kill it well before that and fail.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chorusBinary(t), "-C", dir, "--autopilot", "--headless", "--max-agents", "1")
	cmd.Env = append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var transcript []string
	for sc.Scan() {
		transcript = append(transcript, sc.Text())
		if strings.Contains(sc.Text(), "PROGRESS") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		transcript = append(transcript, sc.Text())
	}
	err = cmd.Wait()
	all := strings.Join(transcript, "\n")
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("exit: %v (want code %d)\n%s", err, ExitInterrupted, all)
	}
	if !strings.Contains(all, "shutdown did not finish within 3s") || !strings.Contains(all, "run chorus again") {
		t.Fatalf("no last-resort message:\n%s", all)
	}
	if _, err := os.Stat(filepath.Join(dir, ".chorus", "shutdown-stacks.txt")); err != nil {
		t.Fatalf("no goroutine dump: %v", err)
	}
}

// TestSecondStopPolicy: a repeat within repeatWindow of the first stop
// signal is the same stop (process and group signalled together); one
// later asks for the emergency exit.
func TestSecondStopPolicy(t *testing.T) {
	first := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{
		{0, false},
		{time.Microsecond, false},
		{300 * time.Millisecond, false},
		{repeatWindow, false},
		{repeatWindow + time.Millisecond, true},
		{10 * time.Second, true},
	} {
		if got := secondStop(first, first.Add(c.after)); got != c.want {
			t.Errorf("second signal %s after the first: emergency exit %v, want %v", c.after, got, c.want)
		}
	}
}

// TestGroupSignalIsOneStop signals the real binary the way timeout(1) and
// cron do: SIGTERM to its process group and to the process itself. The
// shutdown takes seconds (the agent ignores SIGTERM and waits for
// stopGraceSeconds), so the second signal arrives while it runs; it must
// be taken as the same stop: a normal shutdown, not the emergency exit.
func TestGroupSignalIsOneStop(t *testing.T) {
	dir := scriptedProject(t, `
write wip.txt "work in progress"
signal PROGRESS 10
ignore-term
hang
`, func(cfg map[string]any) {
		c := cfg["completion"].(map[string]any)
		c["stopGraceSeconds"] = 3
		c["shutdownGraceSeconds"] = 60
	})
	if r := chorus(t, dir, "task", "create", "stopped by a group signal"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chorusBinary(t), "-C", dir, "--autopilot", "--headless", "--max-agents", "1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	sc := bufio.NewScanner(out)
	var transcript []string
	scanUntil := func(want string) bool {
		for sc.Scan() {
			transcript = append(transcript, sc.Text())
			if strings.Contains(sc.Text(), want) {
				return true
			}
		}
		return false
	}
	if !scanUntil("PROGRESS") {
		t.Fatalf("the agent never reported progress:\n%s", strings.Join(transcript, "\n"))
	}
	// kill -TERM -<pgid>, then the process itself, as timeout(1) does.
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !scanUntil("stopping") {
		t.Fatalf("no sign of the stop:\n%s", strings.Join(transcript, "\n"))
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	scanUntil("\x00") // to the end
	err = cmd.Wait()
	all := strings.Join(transcript, "\n")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("exit: %v (want code %d)\n%s", err, ExitInterrupted, all)
	}
	if strings.Contains(all, "exiting now without finishing") {
		t.Fatalf("one stop sent to the process and its group took the emergency exit:\n%s", all)
	}
	if !strings.Contains(all, "interrupted; 1 running task(s) went back to open with their work committed") {
		t.Fatalf("no normal shutdown:\n%s", all)
	}
	if _, err := os.Stat(filepath.Join(dir, ".chorus", "shutdown-stacks.txt")); err == nil {
		t.Fatal("a goroutine dump was written: the emergency exit ran")
	}
}

// TestStopSaysWhatWasNotCommitted: the disk is full when a stop commits the
// running agent's work (git's WIP commit fails with ENOSPC's message). The
// summary must not claim the work was committed: it names the task and the
// worktree where its files still are.
func TestStopSaysWhatWasNotCommitted(t *testing.T) {
	dir := scriptedProject(t, `
write wip.txt "work the disk had no room to commit"
signal PROGRESS 10
hang
`, nil)
	r := chorus(t, dir, "task", "create", "caught by a full disk")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	script := "#!/bin/sh\ncase \" $* \" in *\" commit \"*\"--no-verify\"*) echo 'error: unable to write file .git/objects/ab/cdef: No space left on device' >&2; echo 'fatal: cannot store blob' >&2; exit 128;; esac\nexec " + realGit + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chorusBinary(t), "-C", dir, "--autopilot", "--headless", "--max-agents", "1")
	cmd.Env = append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var transcript []string
	for sc.Scan() {
		transcript = append(transcript, sc.Text())
		if strings.Contains(sc.Text(), "PROGRESS") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		transcript = append(transcript, sc.Text())
	}
	_ = cmd.Wait()
	all := strings.Join(transcript, "\n")
	if strings.Contains(all, "with their work committed") {
		t.Errorf("the summary claims the work was committed:\n%s", all)
	}
	wt := filepath.Join(dir, ".worktrees")
	var notCommitted string
	for _, l := range transcript {
		if strings.Contains(l, "not committed: "+id) {
			notCommitted = l
		}
	}
	if notCommitted == "" || !strings.Contains(notCommitted, wt) || !strings.Contains(notCommitted, "No space left on device") {
		t.Fatalf("no line naming %s, its worktree under %s and the cause:\n%s", id, wt, all)
	}
	if !strings.Contains(all, "the work of 1 could not be committed") {
		t.Errorf("the exit message does not say it:\n%s", all)
	}
	// The files are where the line says.
	paths, _ := filepath.Glob(filepath.Join(wt, "*", "wip.txt"))
	if len(paths) != 1 || !strings.Contains(notCommitted, filepath.Dir(paths[0])) {
		t.Errorf("wip.txt at %v, the line says: %s", paths, notCommitted)
	}
}

// stoppedLine never says committed when a commit failed.
func TestStoppedLine(t *testing.T) {
	if got := stoppedLine(2, nil); !strings.Contains(got, "with their work committed") {
		t.Errorf("nothing failed: %q", got)
	}
	got := stoppedLine(2, []uncommittedWork{{Task: "t-1", Worktree: "/r/.worktrees/t-1", Why: "committing work in progress: No space left on device"}})
	if strings.Contains(got, "work committed") || !strings.Contains(got, "the work of 1 could not be committed") ||
		!strings.Contains(got, "t-1's changes are still uncommitted files in /r/.worktrees/t-1 (committing work in progress: No space left on device)") {
		t.Errorf("one failed: %q", got)
	}
}

// TestStopWaitSaysWhatWasNotCommitted: `chorus stop --wait` on a
// background engine whose WIP commit fails (disk full) says which task's
// work stays uncommitted and where, instead of nothing.
func TestStopWaitSaysWhatWasNotCommitted(t *testing.T) {
	dir := scriptedProject(t, `
write wip.txt "work the disk had no room to commit"
signal PROGRESS 10
hang
`, nil)
	r := chorus(t, dir, "task", "create", "caught by a full disk")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	script := "#!/bin/sh\ncase \" $* \" in *\" commit \"*\"--no-verify\"*) echo 'fatal: No space left on device' >&2; exit 128;; esac\nexec " + realGit + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	eng := exec.Command(chorusBinary(t), "-C", dir, "engine", "--mode", "autopilot", "--ready-fd", "3")
	eng.Env = append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	eng.ExtraFiles = []*os.File{pw}
	var engOut strings.Builder
	eng.Stdout, eng.Stderr = &engOut, &engOut
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer eng.Process.Kill()
	ev := exec.Command(chorusBinary(t), "-C", dir, "events")
	out, err := ev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(pr); strings.TrimSpace(string(b)) != "ok" {
		t.Fatalf("engine: %q\n%s", b, engOut.String())
	}
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "PROGRESS") {
	}
	r = chorus(t, dir, "stop", "--wait")
	go io.Copy(io.Discard, out)
	_ = ev.Wait()
	_ = eng.Wait()
	if r.code != 0 || !strings.Contains(r.stderr, "the work of 1 task(s) could not be committed") ||
		!strings.Contains(r.stderr, id+"'s changes are still uncommitted files in "+filepath.Join(dir, ".worktrees")) {
		t.Fatalf("stop --wait: %d\n%s\nengine:\n%s", r.code, r.stderr, engOut.String())
	}
}
