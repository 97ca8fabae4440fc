package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// A host with a Git spec works in a clone of the remote under its own
// root, never in the hub's directory: its agent commits, its `chorus
// signal COMPLETE` is pushed then relayed to the engine over the stream;
// a process outside the agent's tree is refused; at the agent's end the
// uncommitted work goes to the remote under WIPRef, and the next host of
// the branch puts it back.
func TestGitHostClonesRelaysAndPushes(t *testing.T) {
	repo := testkit.Repo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	testkit.Git(t, repo, "init", "-q", "--bare", bare)
	testkit.Git(t, repo, "push", "-q", bare, "main:refs/heads/task")
	hub := filepath.Join(t.TempDir(), "hub-worktree") // never created: the host must not need it
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	key, err := signal.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	g := &Git{URL: "file://" + bare, Branch: "task", HubDir: hub, Name: "T", Email: "t@example.com"}
	env := []string{signal.EnvDir + "=/nonexistent/.chorus", signal.EnvAgentID + "=a1", signal.EnvTaskID + "=t1",
		signal.EnvKey + "=" + key, "CHORUS_HOST_TEST_MAIN=signal"}

	run := func(script string) (*Client, string, chan signal.Envelope) {
		root := shortDir(t)
		sock := filepath.Join(shortDir(t), "a.sock")
		ready := make(chan struct{})
		go func() {
			_ = Serve(context.Background(), sock, Options{Orphan: time.Minute, WorkRoot: root, Ready: func() { close(ready) }})
		}()
		<-ready
		cl, err := Dial(ctx(t), sock, "test")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan signal.Envelope, 4)
		cl.OnSignal(func(e signal.Envelope) error { got <- e; return nil })
		sp := Spec{Argv: []string{"sh", "-c", strings.ReplaceAll(script, "SIGNAL", exe)}, Dir: hub, Env: env, Cols: 80, Rows: 24}
		gg := *g
		sp.Git = &gg
		if err := cl.Start(ctx(t), sp); err != nil {
			t.Fatal(err)
		}
		return cl, root, got
	}

	cl, root, got := run(`pwd > where.txt && git add where.txt && git commit -qm work && echo dirty > wip.txt && SIGNAL COMPLETE && echo sent && sleep 60`)
	select {
	case e := <-got:
		if e.Signal.Type != signal.Complete || e.AgentID != "a1" || e.TaskID != "t1" {
			t.Fatalf("relayed %+v", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no signal relayed")
	}
	// Pushed before it was relayed.
	if where := testkit.Git(t, bare, "show", "task:where.txt"); where != filepath.Join(root, "work") {
		t.Fatalf("the agent worked in %q, want the clone under the host's root %s", where, root)
	}
	// A process outside the agent's tree is no one's.
	from := signal.Sender{Dir: filepath.Join(root, "chorus"), AgentID: "a1", TaskID: "t1", Key: key}
	if err := signal.Send(from, signal.Signal{Type: signal.Complete}); err == nil || !strings.Contains(err.Error(), "not one of this agent's processes") {
		t.Fatalf("a signal from outside the agent's tree: %v", err)
	}
	cl.Stop(time.Second)
	if _, err := cl.Wait(); err != nil {
		t.Fatal(err)
	}
	if b := testkit.Git(t, bare, "show", WIPRef("task")+":wip.txt"); b != "dirty" {
		t.Fatalf("the uncommitted work on the remote: %q", b)
	}

	// The next host of the branch finds the work where it was left.
	cl2, _, got2 := run(`cat wip.txt > seen.txt && git status --porcelain > status.txt && git add -A && git commit -qm again && SIGNAL COMPLETE && sleep 60`)
	select {
	case <-got2:
	case <-time.After(30 * time.Second):
		t.Fatal("no signal from the second host")
	}
	if b := testkit.Git(t, bare, "show", "task:seen.txt"); b != "dirty" {
		t.Fatalf("the second host's agent saw wip.txt = %q", b)
	}
	if b := testkit.Git(t, bare, "show", "task:status.txt"); !strings.Contains(b, "?? wip.txt") {
		t.Fatalf("the put-back work should be uncommitted; git status said %q", b)
	}
	cl2.Stop(time.Second)
	_, _ = cl2.Wait()

	// A question the agent asks travels over the stream; the answer
	// comes back to the asking command in the clone.
	cl3, _, got3 := run(`a=$(CHORUS_HOST_TEST_MAIN=ask SIGNAL Which database) && echo "$a" > answer.txt && git add answer.txt && git commit -qm answer && SIGNAL COMPLETE && sleep 60`)
	select {
	case e := <-got3:
		if e.Signal.Type != signal.NeedsHelp || e.Question == nil || e.Question.Text != "Which database" {
			t.Fatalf("relayed %+v, want the question", e)
		}
		if err := cl3.SendAnswer(e.Question.ID, signal.Answer{Question: e.Question.Text, Text: "SQLite"}); err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no question relayed")
	}
	select {
	case e := <-got3:
		if e.Signal.Type != signal.Complete {
			t.Fatalf("relayed %+v, want COMPLETE after the answer", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no COMPLETE after the answer")
	}
	if b := testkit.Git(t, bare, "show", "task:answer.txt"); b != "SQLite" {
		t.Fatalf("the asking command printed %q, want the answer", b)
	}
	cl3.Stop(time.Second)
	_, _ = cl3.Wait()
}

// The hub's files an argv names are written under the host's root and
// the argv names the copies, wherever in an argument the path stands.
func TestCopyFilesNamesTheCopies(t *testing.T) {
	root := t.TempDir()
	hubFile := "/hub/.chorus/logs/a1.prompt.md"
	sp := Spec{Argv: []string{"agent", "--flag", "they are in the file " + hubFile + ". Read it."},
		Files: []File{{Path: hubFile, Data: "the long prompt"}}}
	if err := (&gitWork{}).copyFiles(root, &sp); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(root, "files", "0-a1.prompt.md")
	if want := "they are in the file " + to + ". Read it."; sp.Argv[2] != want || sp.Argv[1] != "--flag" {
		t.Fatalf("argv %q, want its last argument %q", sp.Argv, want)
	}
	if b, err := os.ReadFile(to); err != nil || string(b) != "the long prompt" {
		t.Fatalf("the copy: %q, %v", b, err)
	}
	if sp.Files != nil {
		t.Fatalf("Files kept after the copy (%d): they would travel again in the host's Info", len(sp.Files))
	}
}

// The hub's chorus named in a prompt becomes the host's where the path
// stands whole, not where it begins a longer name.
func TestReplacePathWhole(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Run `/hub/chorus signal COMPLETE`.", "Run `/pod/chorus signal COMPLETE`."},
		{"'/hub/chorus' and /hub/chorus", "'/pod/chorus' and /pod/chorus"},
		{"/hub/chorus-app/x /hub/chorus.d /hub/chorus/y", "/hub/chorus-app/x /hub/chorus.d /hub/chorus/y"},
		{"no path here", "no path here"},
	} {
		if got := replacePath(tc.in, "/hub/chorus", "/pod/chorus"); got != tc.want {
			t.Errorf("replacePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
