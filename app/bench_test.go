package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// readyRepo is a repository with 10,000 tasks and 20,000 dependencies in
// the built-in store: 7,000 closed, the rest open, each depending on two
// earlier tasks.
func readyRepo(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	}
	os.MkdirAll(filepath.Join(dir, ".beads"), 0o755)
	rng := rand.New(rand.NewSource(1))
	var sb strings.Builder
	for i := 0; i < 10000; i++ {
		id := fmt.Sprintf("ch-%04x", i)
		var deps []map[string]any
		for j := 0; j < 2 && i > 1; j++ {
			deps = append(deps, map[string]any{"issue_id": id, "depends_on_id": fmt.Sprintf("ch-%04x", rng.Intn(i)), "type": "blocks", "created_at": "2026-11-22T00:00:00Z"})
		}
		status := "open"
		if i < 7000 {
			status = "closed"
		}
		rec := map[string]any{"_type": "issue", "id": id, "title": fmt.Sprintf("Task %d", i), "description": "do the thing", "status": status,
			"priority": i % 5, "issue_type": "task", "created_at": "2026-11-22T00:00:00Z", "updated_at": "2026-11-22T00:00:00Z", "dependencies": deps}
		line, _ := json.Marshal(rec)
		sb.Write(line)
		sb.WriteByte('\n')
	}
	os.WriteFile(filepath.Join(dir, ".beads", "issues.jsonl"), []byte(sb.String()), 0o644)
	return dir
}

// BenchmarkReadyProcess is `chorus task ready --json` as a whole process on
// 10,000 tasks; BenchmarkGitRevParse is the floor of starting a process in
// the same repository. Run both: -bench 'ReadyProcess|GitRevParse'.
func BenchmarkReadyProcess(b *testing.B) {
	bin := chorusBinary(b)
	dir := readyRepo(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := exec.Command(bin, "-C", dir, "task", "ready", "--json").Output(); err != nil || len(out) < 1000 {
			b.Fatalf("%v %d", err, len(out))
		}
	}
}

func BenchmarkGitRevParse(b *testing.B) {
	dir := readyRepo(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatusVsGitStatus runs `chorus status` on 10,000 tasks and `git
// status` in the same repository in turn (A B A B …, so both see the same
// machine) and reports the CPU and wall ratios, pair by pair: the median,
// the least and the most. The repository also holds a small source tree
// (1,000 committed files), as a project with that many tasks would.
// warm: the task file unchanged since the last status (its counts come
// from the cache); cold: the cache removed before every run (the index
// pass over all 10,000 records); changed: one task's title changed just
// before every run, as `chorus task update` leaves the file (replaced
// whole, the cache stale and the file's change within the same instant
// as the status that reads it); closed: the same, one open task closed
// and reopened in turn (what counting reads changes, so it counts again);
// firstchanged: the cache removed, a first status run (not measured), then
// one task's title changed as in changed: the status after the first
// change that follows a first count.
func BenchmarkStatusVsGitStatus(b *testing.B) {
	b.Run("warm", func(b *testing.B) { statusVsGitStatus(b, "warm") })
	b.Run("cold", func(b *testing.B) { statusVsGitStatus(b, "cold") })
	b.Run("changed", func(b *testing.B) { statusVsGitStatus(b, "changed") })
	b.Run("closed", func(b *testing.B) { statusVsGitStatus(b, "closed") })
	b.Run("firstchanged", func(b *testing.B) { statusVsGitStatus(b, "firstchanged") })
}

func statusVsGitStatus(b *testing.B, how string) {
	bin := chorusBinary(b)
	dir := readyRepo(b)
	for i := 0; i < 1000; i++ {
		p := filepath.Join(dir, "src", fmt.Sprintf("d%02d", i/50), fmt.Sprintf("f%04d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("package d\n\nconst C%d = %d\n", i, i)), 0o644)
	}
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "tree"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	}
	run := func(name string, args ...string) (cpu, wall time.Duration) {
		cmd := exec.Command(name, args...)
		start := time.Now()
		if out, err := cmd.Output(); err != nil || len(out) == 0 {
			b.Fatalf("%s %v: %v", name, args, err)
		}
		wall = time.Since(start)
		return testkit.CPU(cmd.ProcessState), wall
	}
	var cpuR, wallR []float64
	b.ResetTimer()
	cache := filepath.Join(dir, ".beads", "chorus-cache")
	tasks := filepath.Join(dir, ".beads", "issues.jsonl")
	orig, err := os.ReadFile(tasks)
	if err != nil {
		b.Fatal(err)
	}
	closed := bytes.Replace(orig, []byte(`"id":"ch-270f","issue_type":"task","priority":4,"status":"open"`), []byte(`"id":"ch-270f","issue_type":"task","priority":4,"status":"closed"`), 1)
	if bytes.Equal(closed, orig) {
		b.Fatal("the task to close is not in the file")
	}
	// replace writes the task file as `chorus task update` does: whole,
	// then renamed over it.
	replace := func(data []byte) {
		tmp := tasks + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, tasks); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	for b.Loop() {
		switch how {
		case "cold":
			if err := os.RemoveAll(cache); err != nil {
				b.Fatal(err)
			}
		case "changed", "firstchanged":
			n++
			if how == "firstchanged" {
				if err := os.RemoveAll(cache); err != nil {
					b.Fatal(err)
				}
				replace(orig)
				run(bin, "-C", dir, "status")
			}
			data := bytes.Replace(orig, []byte(`"title":"Task 9999"`), fmt.Appendf(nil, `"title":"Task 9999 (%d)"`, n), 1)
			if bytes.Equal(data, orig) {
				b.Fatal("the task to change is not in the file")
			}
			replace(data)
		case "closed":
			n++
			data := orig
			if n%2 == 1 {
				data = closed
			}
			replace(data)
		}
		ac, aw := run(bin, "-C", dir, "status")
		bc, bw := run("git", "-C", dir, "status")
		cpuR = append(cpuR, float64(ac)/float64(max(bc, time.Millisecond)))
		wallR = append(wallR, float64(aw)/float64(bw))
	}
	b.StopTimer()
	testkit.ReportSpread(b, cpuR, "cpu-ratio")
	testkit.ReportSpread(b, wallR, "wall-ratio")
}
