package app

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
