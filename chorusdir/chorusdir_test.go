package chorusdir

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

func TestLockOnePerRepository(t *testing.T) {
	d := At(t.TempDir())
	l, err := d.Acquire("first")
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.InspectLock()
	if err != nil || !st.Held || st.Holder.PID != os.Getpid() || st.Holder.Command != "first" {
		t.Fatalf("inspect: %+v %v", st, err)
	}
	// A second process is refused and told who holds it.
	out, err := exec.Command("flock", "-n", d.Lock(), "true").CombinedOutput()
	if err == nil {
		t.Fatalf("flock on a held lock succeeded: %s", out)
	}
	_, err = d.Acquire("second")
	var he *HeldError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "another Chorus is running") {
		t.Fatalf("second acquire: %v", err)
	}
	l.Release()
	if _, err := os.Stat(d.Lock()); !os.IsNotExist(err) {
		t.Fatal("lock file left after release")
	}
	l2, err := d.Acquire("again")
	if err != nil {
		t.Fatal(err)
	}
	l2.Release()
}

func TestStaleLockTakenOver(t *testing.T) {
	d := At(t.TempDir())
	os.MkdirAll(d.Path, 0o755)
	b, _ := json.Marshal(Holder{PID: 999999, Host: "h", Command: "killed"})
	os.WriteFile(d.Lock(), b, 0o644)
	st, err := d.InspectLock()
	if err != nil || !st.Stale() || st.Holder.PID != 999999 {
		t.Fatalf("inspect: %+v %v", st, err)
	}
	l, err := d.Acquire("new")
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func TestSessionLogLinesWhole(t *testing.T) {
	d := At(t.TempDir())
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d.AppendLog("implementation", "event", map[string]any{"i": i, "text": strings.Repeat("x", 3000)})
		}(i)
	}
	wg.Wait()
	b, _ := os.ReadFile(d.SessionLog())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		var e Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Event != "event" {
			t.Fatalf("bad line %q: %v", l[:40], err)
		}
	}
}

func TestWriteAtomic(t *testing.T) {
	p := t.TempDir() + "/a/b.json"
	if err := WriteAtomic(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "two" || st.Mode().Perm() != 0o600 {
		t.Fatalf("%q %v", b, st.Mode())
	}
}

// A session log line a kill cut short does not swallow the next event:
// it starts on a line of its own (the old code appended it to the cut
// line, and readers skipped both).
func TestAppendLogAfterACutLine(t *testing.T) {
	d := At(t.TempDir())
	if err := os.MkdirAll(d.Path, DirMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.SessionLog(), []byte(`{"ts":"2026-01-01T00:00:00Z","mode":"x","event":"cut`), FileMode); err != nil {
		t.Fatal(err)
	}
	if err := d.AppendLog("implementation", "next", map[string]any{"taskId": "t-1"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(d.SessionLog())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var e Entry
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &e) != nil || e.Event != "next" {
		t.Fatalf("log:\n%s", b)
	}
}
