package beads_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
)

// writeBig writes n tasks with 2 blocking deps each (on earlier tasks, so
// no cycles) in bd's export shape: 10,000 tasks give 20,000 deps.
func writeBig(tb testing.TB, repo string, n int) {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	statuses := []string{"open", "open", "open", "open", "open", "open", "closed", "closed", "closed", "in_progress"}
	for i := range n {
		id := fmt.Sprintf("ch-%05x", i)
		ts := base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		fmt.Fprintf(&buf, `{"_type":"issue","id":%q,"title":"Task number %d: implement the thing","description":"Some description of task %d that is a little longer, with \"quotes\" and a newline\nhere.","status":%q,"priority":%d,"issue_type":"task","owner":"dev@example.com","created_at":%q,"created_by":"orchestrator","updated_at":%q,"labels":["backend","area-%d"]`,
			id, i, i, statuses[r.IntN(len(statuses))], r.IntN(5), ts, ts, i%7)
		if i > 2 {
			buf.WriteString(`,"dependencies":[`)
			for k := range 2 {
				if k > 0 {
					buf.WriteByte(',')
				}
				fmt.Fprintf(&buf, `{"issue_id":%q,"depends_on_id":"ch-%05x","type":"blocks","created_at":%q,"created_by":"orchestrator","metadata":"{}"}`, id, r.IntN(i), ts)
			}
			buf.WriteByte(']')
		}
		fmt.Fprintf(&buf, `,"metadata":{"model":"sonnet"},"dependency_count":2,"dependent_count":0,"comment_count":0}`+"\n")
	}
	dir := filepath.Join(repo, ".beads")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "issues.jsonl"), buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Ready on a loaded store (the file unchanged since the last read).
func BenchmarkBuiltinReady10k(b *testing.B) {
	repo := initRepo(b)
	writeBig(b, repo, 10000)
	s, err := beads.Open(bg, beads.OpenOptions{RepoDir: repo})
	if err != nil {
		b.Fatal(err)
	}
	r, err := s.Ready(bg, beads.ReadyOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(r)), "ready")
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Ready(bg, beads.ReadyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Open + read + parse + Ready from cold, as a CLI start does.
func BenchmarkBuiltinOpenLoadReady10k(b *testing.B) {
	repo := initRepo(b)
	writeBig(b, repo, 10000)
	for b.Loop() {
		s, err := beads.Open(bg, beads.OpenOptions{RepoDir: repo})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Ready(bg, beads.ReadyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// One write (claim) at 10k tasks: read-modify-write with fsync.
func BenchmarkBuiltinClaim10k(b *testing.B) {
	repo := initRepo(b)
	writeBig(b, repo, 10000)
	s, err := beads.Open(bg, beads.OpenOptions{RepoDir: repo})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		r, err := s.Ready(bg, beads.ReadyOptions{})
		if err != nil || len(r) == 0 {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.Claim(bg, r[0].ID, "agent"); err != nil {
			b.Fatal(err)
		}
	}
}

// Whole process: start, resolve .beads, load 10k tasks, compute Ready,
// against `git rev-parse HEAD` in the same repo as the yardstick.
func BenchmarkProcessReady10k(b *testing.B) {
	repo := initRepo(b)
	writeBig(b, repo, 10000)
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CHORUS_BEADS_HELPER=ready", "HELPER_DIR="+repo)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

func BenchmarkProcessGitRevParse(b *testing.B) {
	repo := initRepo(b)
	for b.Loop() {
		cmd := exec.Command("git", "rev-parse", "HEAD")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// Open + read + every task decoded, as `chorus task list --json` does.
func BenchmarkBuiltinOpenList10k(b *testing.B) {
	repo := initRepo(b)
	writeBig(b, repo, 10000)
	for b.Loop() {
		s, err := beads.Open(bg, beads.OpenOptions{RepoDir: repo})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.List(bg); err != nil {
			b.Fatal(err)
		}
	}
}

// Open + read + index pass + counts, as `chorus status` does.
func BenchmarkBuiltinOpenCounts10k(b *testing.B) {
	repo := initRepo(b)
	writeBig(b, repo, 10000)
	for b.Loop() {
		s, err := beads.Open(bg, beads.OpenOptions{RepoDir: repo})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := beads.CountTasks(bg, s, beads.ReadyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Open + counts after one task changed, as `chorus status` after `chorus
// task update`: a title (the memo's counts hold) or a status (counted
// again, the changed line decoded, the memo renewed).
func BenchmarkBuiltinCountsAfterChange10k(b *testing.B) {
	b.Run("title", func(b *testing.B) {
		countsAfterChange(b, func(l []byte) []byte {
			return bytes.Replace(l, []byte(`"title":"Task number 9999:`), []byte(`"title":"Task number 9999 (1):`), 1)
		})
	})
	b.Run("status", func(b *testing.B) {
		countsAfterChange(b, func(l []byte) []byte {
			return bytes.Replace(l, []byte(`"status":"`), []byte(`"status":"closed","was":"`), 1)
		})
	})
}

func countsAfterChange(b *testing.B, change func(line []byte) []byte) {
	repo := initRepo(b)
	writeBig(b, repo, 10000)
	path := filepath.Join(repo, ".beads", "issues.jsonl")
	orig, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	count := func() {
		s, err := beads.Open(bg, beads.OpenOptions{RepoDir: repo})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := beads.CountTasks(bg, s, beads.ReadyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	count() // the memo written
	// The two versions take turns, so a status change counts every time.
	at := bytes.Index(orig, []byte(`{"_type":"issue","id":"ch-0270f"`))
	if at < 0 {
		b.Fatal("the task to change is not in the file")
	}
	end := at + bytes.IndexByte(orig[at:], '\n')
	variants := [2][]byte{orig, slices.Concat(orig[:at], change(slices.Clone(orig[at:end])), orig[end:])}
	if bytes.Equal(variants[0], variants[1]) {
		b.Fatal("the task to change is not in the file")
	}
	n := 0
	for b.Loop() {
		n++
		if err := os.WriteFile(path+".tmp", variants[n%2], 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			b.Fatal(err)
		}
		count()
	}
}

// Open + counts with the cache removed first: a store nobody counted
// (cold), and the count after the first change that follows a first
// count (firstchanged).
func BenchmarkBuiltinCountsCold10k(b *testing.B) {
	for _, how := range []string{"cold", "firstchanged"} {
		b.Run(how, func(b *testing.B) {
			repo := initRepo(b)
			writeBig(b, repo, 10000)
			path := filepath.Join(repo, ".beads", "issues.jsonl")
			orig, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			changed := bytes.Replace(orig, []byte(`"title":"Task number 9999:`), []byte(`"title":"Task number 9999 (1):`), 1)
			count := func() {
				s, err := beads.Open(bg, beads.OpenOptions{RepoDir: repo})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := beads.CountTasks(bg, s, beads.ReadyOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			write := func(data []byte) {
				if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
					b.Fatal(err)
				}
				if err := os.Rename(path+".tmp", path); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				b.StopTimer()
				if err := os.RemoveAll(filepath.Join(repo, ".beads", "chorus-cache")); err != nil {
					b.Fatal(err)
				}
				if how == "firstchanged" {
					write(orig)
					count()
					write(changed)
				}
				b.StartTimer()
				count()
			}
		})
	}
}
