package merge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
)

// The 5,000-file repository of merge.md §3.1: 50 dirs × 100 files × 40
// lines, 200 commits on main, 20 branches forked at commit 150 with 2
// commits each touching 3 files; every branch merges cleanly.
const benchBranches = 20

var (
	benchOnce sync.Once
	benchTmpl string
	benchErr  error
)

func benchTemplate(b *testing.B) string {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chorus-bench-*")
		if err != nil {
			benchErr = err
			return
		}
		benchTmpl = filepath.Join(dir, "repo")
		benchErr = genRepo(benchTmpl)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchTmpl
}

func fileLines(d, f, rev int) string {
	var sb strings.Builder
	for l := 0; l < 40; l++ {
		fmt.Fprintf(&sb, "line %d of src/pkg%02d/file%03d.go rev %d\n", l, d, f, rev)
	}
	return sb.String()
}

func genRepo(dir string) error {
	if out, err := exec.Command("git", "init", "-q", "-b", "main", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	for _, kv := range [][2]string{{"user.name", "Bench"}, {"user.email", "bench@example.com"}} {
		if err := exec.Command("git", "-C", dir, "config", kv[0], kv[1]).Run(); err != nil {
			return err
		}
	}
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriter(in)
	data := func(s string) { fmt.Fprintf(w, "data %d\n%s\n", len(s), s) }
	ts := 1700000000
	commit := func(ref string, mark int, from int, msg string, files map[string]string) {
		fmt.Fprintf(w, "commit %s\nmark :%d\ncommitter Bench <bench@example.com> %d +0000\n", ref, mark, ts)
		ts++
		data(msg)
		if from > 0 {
			fmt.Fprintf(w, "from :%d\n", from)
		}
		keys := make([]string, 0, len(files))
		for k := range files {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "M 100644 inline %s\n", k)
			data(files[k])
		}
		w.WriteString("\n")
	}
	first := map[string]string{"LEARNINGS.md": "# Learnings\n"}
	for d := 0; d < 50; d++ {
		for f := 0; f < 100; f++ {
			first[fmt.Sprintf("src/pkg%02d/file%03d.go", d, f)] = fileLines(d, f, 0)
		}
	}
	commit("refs/heads/main", 1, 0, "initial", first)
	for i := 2; i <= 200; i++ {
		d, f := i%50, 50+i%50
		commit("refs/heads/main", i, i-1, fmt.Sprintf("main %d", i), map[string]string{fmt.Sprintf("src/pkg%02d/file%03d.go", d, f): fileLines(d, f, i)})
	}
	mark := 1000
	for k := 0; k < benchBranches; k++ {
		ref := fmt.Sprintf("refs/heads/agent/a%d/ch-%02d", k%4, k)
		for c := 1; c <= 2; c++ {
			files := map[string]string{}
			for j := 0; j < 3; j++ {
				files[fmt.Sprintf("src/pkg%02d/file%03d.go", k, 10+j)] = fileLines(k, 10+j, 1000+c)
			}
			from := 150
			if c == 2 {
				from = mark
			}
			mark++
			commit(ref, mark, from, fmt.Sprintf("[ch-%02d] agent work part %d/2", k, c-1), files)
		}
	}
	w.WriteString("done\n")
	if err := w.Flush(); err != nil {
		return err
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		return err
	}
	// A checkout of something other than main, so every method lands by CAS.
	out, err := exec.Command("git", "-C", dir, "checkout", "-q", "--detach", "main").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

func benchBranchNames() []string {
	var names []string
	for k := 0; k < benchBranches; k++ {
		names = append(names, fmt.Sprintf("agent/a%d/ch-%02d", k%4, k))
	}
	return names
}

func copyRepo(b *testing.B, src string) string {
	dst := filepath.Join(b.TempDir(), "repo")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	return dst
}

func scriptPath(b *testing.B) string {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "scripts", "bench-merge.sh")
	if _, err := os.Stat(p); err != nil {
		b.Fatal(err)
	}
	return p
}

// runScript runs a baseline over all branches and returns the time per merge.
func runScript(b *testing.B, mode, repo string) time.Duration {
	args := append([]string{scriptPath(b), mode, repo, "main"}, benchBranchNames()...)
	out, err := exec.Command("sh", args...).CombinedOutput()
	if err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatalf("script output %q", out)
	}
	return time.Duration(ns) / benchBranches
}

// runService merges all branches through the Service (queue, persist,
// candidate ref, CAS landing, cleanup) and returns the time per merge,
// from the first Enqueue until the last item landed and was cleaned up.
func runService(b *testing.B, repo string, persist bool, q []string) (time.Duration, time.Duration) {
	opt := baseOptions(repo)
	// Without persistence, also without Chorus's extra fsyncs: the same
	// durability as the plumbing script.
	opt.NoFsync = !persist
	opt.Checkpoints.Periodic = 0
	opt.Quality = quality(q...)
	var p Persist
	if persist {
		// What the engine does: the whole queue into state.json, fsync'd.
		path := filepath.Join(repo, ".chorus", "state.json")
		p = func(items []Item, st Stats) error {
			bs, err := jsonMarshal(persisted{items, st})
			if err != nil {
				return err
			}
			return chorusdir.WriteAtomic(path, bs, 0o644)
		}
	}
	svc, err := New(opt, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := svc.ensureIntegration(ctx); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t0 := time.Now()
	for i, br := range benchBranchNames() {
		if err := svc.Enqueue(Request{TaskID: fmt.Sprintf("ch-%02d", i), Branch: br, Title: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	svc.Drain()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	total := time.Since(t0)
	st := svc.Snapshot().Stats
	if st.MergesAuto != benchBranches {
		b.Fatalf("landed %d of %d", st.MergesAuto, benchBranches)
	}
	return total / benchBranches, total
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkCleanMerge5k compares, in the same run and interleaved, the
// per-merge cost of the Service against the bare plumbing sequence and
// against `git merge` in a reused worktree (quality commands excluded).
// "service" is the production setup (state persisted with fsync, git objects
// and refs fsynced); "service-bare" has the script's durability (no state
// file, git's default fsync), so the ratio shows the code's own overhead.
// Run with: go test -run '^$' -bench CleanMerge5k -benchtime 5x ./merge/
func BenchmarkCleanMerge5k(b *testing.B) {
	tmpl := benchTemplate(b)
	var svc, svcBare, plumb, wt []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r1, r2, r3, r4 := copyRepo(b, tmpl), copyRepo(b, tmpl), copyRepo(b, tmpl), copyRepo(b, tmpl)
		// The worktree method's one-time worktree creation is not per merge.
		if out, err := exec.Command("git", "-C", r4, "worktree", "add", "-q", "--detach", filepath.Join(r4, ".worktrees", "_bench"), "main").CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		b.StartTimer()
		plumb = append(plumb, runScript(b, "plumbing", r1))
		d, _ := runService(b, r2, true, nil)
		svc = append(svc, d)
		d, _ = runService(b, r3, false, nil)
		svcBare = append(svcBare, d)
		wt = append(wt, runScript(b, "worktree", r4))
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(median(svc)), "service-ms/merge")
	b.ReportMetric(ms(median(svcBare)), "service-bare-ms/merge")
	b.ReportMetric(ms(median(plumb)), "plumbing-ms/merge")
	b.ReportMetric(ms(median(wt)), "gitmerge-wt-ms/merge")
	b.ReportMetric(float64(median(svc))/float64(median(plumb)), "service/plumbing")
	b.ReportMetric(float64(median(svcBare))/float64(median(plumb)), "service-bare/plumbing")
	b.ReportMetric(float64(median(svc))/float64(median(wt)), "service/gitmerge-wt")
}

// BenchmarkQueue20Quality1s: 20 queued clean branches, each candidate
// tested with a 1-second quality command. Reports total wall time and
// merges per minute.
func BenchmarkQueue20Quality1s(b *testing.B) {
	tmpl := benchTemplate(b)
	var totals []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := copyRepo(b, tmpl)
		b.StartTimer()
		_, total := runService(b, r, true, []string{"sleep 1"})
		totals = append(totals, total)
	}
	m := median(totals)
	b.ReportMetric(m.Seconds(), "total-s")
	b.ReportMetric(float64(benchBranches)/m.Minutes(), "merges/min")
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
