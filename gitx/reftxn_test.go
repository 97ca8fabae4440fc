package gitx

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Transactions through one process: each all or nothing, a refused one
// ends the process with git's reason and the next starts a new one.
func TestRefUpdaterTransactions(t *testing.T) {
	dir := repo(t)
	ctx := context.Background()
	head := git(t, dir, "rev-parse", "HEAD")
	u := NewRefUpdater(dir, "-c", "core.fsync=reference")
	defer u.Close()

	if err := u.Apply(ctx, []string{"update refs/chorus/a " + head, "update refs/chorus/b " + head}); err != nil {
		t.Fatal(err)
	}
	pid := u.cmd.Process.Pid
	if err := u.Apply(ctx, []string{"delete refs/chorus/a " + head}); err != nil {
		t.Fatal(err)
	}
	if u.cmd.Process.Pid != pid {
		t.Fatal("a second transaction started a new process")
	}
	if got := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/chorus/"); got != "refs/chorus/b" {
		t.Fatalf("refs after two transactions: %q", got)
	}

	// A stale old value refuses the whole transaction: c is not created.
	stale := strings.Repeat("1", 40)
	err := u.Apply(ctx, []string{"update refs/chorus/c " + head, "delete refs/chorus/b " + stale})
	if err == nil || !IsRefTxnError(err) || !strings.Contains(err.Error(), "refs/chorus/b") {
		t.Fatalf("stale delete: %v, want git's refusal naming the ref", err)
	}
	if got := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/chorus/"); got != "refs/chorus/b" {
		t.Fatalf("a refused transaction changed refs: %q", got)
	}
	if err := u.Apply(ctx, []string{"update refs/chorus/c " + head}); err != nil {
		t.Fatalf("after a refusal: %v", err)
	}

	// A killed process is replaced.
	_ = syscall.Kill(u.cmd.Process.Pid, syscall.SIGKILL)
	if err := u.Apply(ctx, []string{"delete refs/chorus/c"}); err == nil {
		t.Log("the kill landed after the write") // either is fine; the next must work
	}
	if err := u.Apply(ctx, []string{"delete refs/chorus/b"}); err != nil {
		t.Fatalf("after a kill: %v", err)
	}

	for _, bad := range []string{"update refs/x " + head + "\nupdate refs/y " + head, "option no-deref", ""} {
		if err := u.Apply(ctx, []string{bad}); err == nil {
			t.Errorf("line %q accepted", bad)
		}
	}

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := u.Apply(ctx, []string{"update refs/chorus/p" + string(rune('a'+i)) + " " + head}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, r := range strings.Fields(git(t, dir, "for-each-ref", "--format=%(refname)", "refs/chorus/")) {
		if strings.HasPrefix(r, "refs/chorus/p") {
			n++
		}
	}
	if n != 8 {
		t.Fatalf("%d of 8 concurrent transactions applied", n)
	}
	if err := u.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
