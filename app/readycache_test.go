package app

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// readyFixture drives `chorus task ready --json` as separate processes of
// the real binary and compares every answer with one computed in this
// process without the cache.
type readyFixture struct {
	t   *testing.T
	dir string
}

func (f readyFixture) run(args ...string) string {
	f.t.Helper()
	cmd := exec.Command(chorusBinary(f.t), append([]string{"-C", f.dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		f.t.Fatalf("chorus %v: %v %s", args, err, errb.String())
	}
	return out.String()
}

// ready returns the binary's answer after checking it against the
// uncached one.
func (f readyFixture) ready(opt beads.ReadyOptions) string {
	f.t.Helper()
	args := []string{"task", "ready", "--json"}
	if opt.IncludeDeferred {
		args = append(args, "--include-deferred")
	}
	got := f.run(args...)
	s, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: f.dir})
	if err != nil {
		f.t.Fatal(err)
	}
	ts, err := s.Ready(context.Background(), opt)
	if err != nil {
		f.t.Fatal(err)
	}
	want, _ := tasksJSON(ts)
	if got != string(want) {
		f.t.Fatalf("task ready --json differs from the uncached answer\ngot  %s\nwant %s", got, want)
	}
	return got
}

// cacheInodes maps each cache file to its inode: a computed answer is
// renamed into place as a new file, a cached one leaves the file alone.
func (f readyFixture) cacheInodes() map[string]uint64 {
	f.t.Helper()
	m := map[string]uint64{}
	files, _ := filepath.Glob(filepath.Join(f.dir, ".beads", "chorus-cache", "ready-*"))
	for _, p := range files {
		if st, err := os.Stat(p); err == nil {
			m[p] = st.Sys().(*syscall.Stat_t).Ino
		}
	}
	return m
}

// hit asserts that the last ready call was answered from the cache.
func (f readyFixture) hit(before map[string]uint64) {
	f.t.Helper()
	after := f.cacheInodes()
	if len(after) == 0 || len(after) != len(before) {
		f.t.Fatalf("cache files %v, before %v", after, before)
	}
	for p, ino := range after {
		if before[p] != ino {
			f.t.Fatalf("%s was rewritten: the answer was computed, not cached", p)
		}
	}
}

func TestTaskReadyJSONCache(t *testing.T) {
	f := readyFixture{t, gitRepo(t)}
	all := beads.ReadyOptions{IncludeDeferred: true}
	a := strings.TrimSpace(f.run("task", "create", "first", "-p", "1"))
	b := strings.TrimSpace(f.run("task", "create", "second", "--deps", a))
	c := strings.TrimSpace(f.run("task", "create", "third <&>", "-p", "3"))

	r := f.ready(beads.ReadyOptions{})
	if !strings.Contains(r, a) || strings.Contains(r, b) || !strings.Contains(r, c) {
		t.Fatalf("ready: %s", r)
	}
	before := f.cacheInodes()
	if again := f.ready(beads.ReadyOptions{}); again != r {
		t.Fatal("second answer differs")
	}
	f.hit(before)

	// Each change made by another process changes the answer.
	steps := []struct {
		name   string
		change func()
	}{
		{"close", func() { f.run("task", "close", a) }},
		{"claim", func() {
			s, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: f.dir, Actor: "agent"})
			if err == nil {
				_, err = s.Claim(context.Background(), b, "agent")
			}
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"dependency", func() {
			s, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: f.dir})
			if err == nil {
				err = s.AddDependency(context.Background(), c, b)
			}
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"create", func() { f.run("task", "create", "fourth", "-p", "0") }},
		{"label", func() { f.run("task", "label", "add", a, "deferred"); f.run("task", "reopen", a) }},
	}
	prev, prevAll := r, f.ready(all)
	for _, s := range steps {
		s.change()
		got, gotAll := f.ready(beads.ReadyOptions{}), f.ready(all)
		if got == prev && gotAll == prevAll {
			t.Fatalf("%s: the answer did not change: %s", s.name, got)
		}
		before := f.cacheInodes()
		f.ready(beads.ReadyOptions{})
		f.ready(all)
		f.hit(before)
		prev, prevAll = got, gotAll
	}
	if strings.Contains(prev, a) || !strings.Contains(prevAll, a) {
		t.Fatalf("deferred task: ready %s, with deferred %s", prev, prevAll)
	}

	if st, _ := exec.Command("git", "-C", f.dir, "status", "--porcelain", "--untracked-files=all").Output(); strings.Contains(string(st), "chorus-cache") {
		t.Fatalf("cache visible to git:\n%s", st)
	}
}

// A damaged cache file is answered around and repaired; a same-size
// rewrite of the task file by another process is noticed.
func TestTaskReadyJSONCacheRecovers(t *testing.T) {
	f := readyFixture{t, gitRepo(t)}
	f.run("task", "create", "first", "-p", "1")
	f.run("task", "create", "second", "-p", "2")
	r := f.ready(beads.ReadyOptions{})
	var file string
	for p := range f.cacheInodes() {
		file = p
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"truncated": good[:len(good)/2],
		"garbage":   []byte("garbage\n\x00\x01"),
		"empty":     nil,
	} {
		os.WriteFile(file, b, 0o644)
		if got := f.ready(beads.ReadyOptions{}); got != r {
			t.Fatalf("%s: answer changed", name)
		}
		before := f.cacheInodes()
		f.ready(beads.ReadyOptions{})
		f.hit(before)
	}

	path := filepath.Join(f.dir, ".beads", "issues.jsonl")
	old, _ := os.ReadFile(path)
	changed := bytes.Replace(old, []byte(`"priority":2`), []byte(`"priority":0`), 1)
	src := filepath.Join(t.TempDir(), "new.jsonl")
	os.WriteFile(src, changed, 0o644)
	if out, err := exec.Command("sh", "-c", `cat "$1" > "$2"`, "sh", src, path).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if got := f.ready(beads.ReadyOptions{}); got == r {
		t.Fatal("same-size rewrite not noticed")
	}
}
