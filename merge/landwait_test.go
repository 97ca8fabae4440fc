package merge

import (
	"context"
	"testing"
	"time"
)

// Landing's channel closes once the item has landed, when nothing but
// the integrator stands before it; a task not queued has nothing to wait
// for; a check before the landing means no wait at all; a service that
// stops releases its waiters.
func TestLandingClosesOnceLanded(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	branch, _ := r.agentBranch("lw-1", "main", map[string]string{"lw.txt": "lw\n"}, false)
	svc, err := New(baseOptions(r.dir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ch := svc.Landing("lw-0"); ch == nil || !closed(ch) {
		t.Fatal("a task not in the queue is waited for")
	}
	if err := svc.Enqueue(Request{TaskID: "lw-1", Branch: branch}); err != nil {
		t.Fatal(err)
	}
	ch := svc.Landing("lw-1")
	if ch == nil || closed(ch) {
		t.Fatal("a queued task is not waited for")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ch:
	case <-time.After(90 * time.Second): // a hang's guard only
		t.Fatal("the landing was never told")
	}
	if it, _ := item(svc.Snapshot(), "lw-1"); it.Status != StatusLanded {
		t.Fatalf("told before the landing: %s", it.Status)
	}

	// Behind a dependency still queued: not for the integrator alone.
	idle, err := New(baseOptions(r.dir), nil, nil) // never run
	if err != nil {
		t.Fatal(err)
	}
	for _, rq := range []Request{{TaskID: "lw-3"}, {TaskID: "lw-2", DependsOn: []string{"lw-3"}}} {
		rq.Branch, _ = r.agentBranch(rq.TaskID, "main", map[string]string{rq.TaskID + ".txt": "lw\n"}, false)
		if err := idle.Enqueue(rq); err != nil {
			t.Fatal(err)
		}
	}
	if closed(idle.Landing("lw-3")) || !closed(idle.Landing("lw-2")) {
		t.Fatal("a task behind a queued dependency is waited for, or the dependency is not")
	}

	checked, err := New(func() Options { o := baseOptions(r.dir); o.Quality = quality("true"); return o }(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ch := checked.Landing("lw-1"); ch != nil {
		t.Fatal("a landing behind a check is waited for")
	}
}

// A pause, and a service that stops, tell the waiters: no landing is
// coming.
func TestLandingReleasedOnPauseAndStop(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	for _, stop := range []bool{false, true} {
		branch, _ := r.agentBranch("ls-1", "main", map[string]string{"ls.txt": "ls\n"}, false)
		svc, err := New(baseOptions(r.dir), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Enqueue(Request{TaskID: "ls-1", Branch: branch}); err != nil {
			t.Fatal(err)
		}
		ch := svc.Landing("ls-1")
		if closed(ch) {
			t.Fatal("a queued task is not waited for")
		}
		if stop {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // Run returns at once
			_ = svc.Run(ctx)
		} else {
			svc.pause("held for the test", nil)
			if !closed(svc.Landing("ls-1")) {
				t.Fatal("a paused queue's task is waited for")
			}
		}
		if !closed(ch) {
			t.Fatalf("the waiter still waits (stopped: %v)", stop)
		}
		r.git("branch", "-D", branch)
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
