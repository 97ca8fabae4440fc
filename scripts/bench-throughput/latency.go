package main

// The latency mode: one agent, tasks one after another, each signalling
// COMPLETE through `chorus signal`; per task, the time from just before
// the signal starts to the merge_landed event, against the floor in the
// same round: a shell that starts the same binary once (the signal's own
// start) and runs the three git processes a landing needs (merge-tree,
// commit-tree, and merge --ff-only, which moves main and its checkout as
// Chorus's landing does when the target is checked out) on a prepared
// branch.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

const latencyScript = `write f-$CHORUS_TASK_ID.txt task
commit "feat: task work"
run "echo $CHORUS_TASK_ID $(date +%%s%%N) >>%s"
signal COMPLETE
`

// The floor for one task: stamp, the signal binary's start (the one
// agents run: chorus-signal when it is beside chorus; outside Chorus it
// stops at its environment check), three git processes, stamp.
const floorScript = `set -eu
for i in $(seq "$N"); do
	s=$(date +%s%N)
	"$SIGNAL" signal COMPLETE 2>/dev/null || true
	tree=$(git merge-tree --write-tree main "t$i")
	c=$(git commit-tree "$tree" -p main -p "t$i" -m "Merge t$i")
	git merge --ff-only -q "$c"
	echo "$s $(date +%s%N)"
done
`

func runLatency(b *bench, rounds int) {
	var ratios, chMed, flMed []float64
	for r := range rounds {
		ch, err := b.chorusLatency(r)
		if err != nil {
			fail(fmt.Errorf("chorus latency: %w", err))
		}
		fl, err := b.floorLatency(r)
		if err != nil {
			fail(fmt.Errorf("floor latency: %w", err))
		}
		c, f := medianOf(ch), medianOf(fl)
		chMed, flMed, ratios = append(chMed, c), append(flMed, f), append(ratios, c/f)
		fmt.Printf("  round %d: signal→main median %.0f ms (%.0f–%.0f, %d tasks), floor %.0f ms (%.0f–%.0f): %.2f×\n",
			r+1, c, minOf(ch), maxOf(ch), len(ch), f, minOf(fl), maxOf(fl), c/f)
	}
	fmt.Printf("signal→main %.0f ms, floor %.0f ms; ratio median %.2f× (%.2f–%.2f, %d rounds of %d tasks)\n",
		medianOf(chMed), medianOf(flMed), medianOf(ratios), minOf(ratios), maxOf(ratios), rounds, b.n)
}

// chorusLatency runs one autopilot session of b.n tasks with one agent and
// returns each task's signal→landing time in ms.
func (b *bench) chorusLatency(round int) ([]float64, error) {
	dir, err := b.setupChorus(fmt.Sprintf("chorus-lat-%d", round), "", false)
	if err != nil {
		return nil, err
	}
	stamps := filepath.Join(b.root, fmt.Sprintf("stamps-%d", round))
	if err := os.WriteFile(filepath.Join(dir, "agent.script"), []byte(fmt.Sprintf(latencyScript, stamps)), 0o644); err != nil {
		return nil, err
	}
	if err := b.git(dir, "commit", "-q", "-am", "latency script"); err != nil {
		return nil, err
	}
	argv := []string{b.chorus, "-C", dir, "--autopilot", "--headless", "--json", "--max-agents", "1"}
	if w := strings.Fields(os.Getenv("BENCH_WRAP")); len(w) > 0 {
		argv = append(w, argv...) // a diagnostic wrapper, as in runChorus
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = b.env(os.DevNull)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, tailOf(out.String(), 3000))
	}
	landed := map[string]time.Time{}
	seen := map[string][]traced{} // BENCH_TRACE: each task's events in order
	for _, ev := range events(out.Bytes()) {
		if ev.Kind == "merge_landed" {
			landed[ev.Task] = ev.Time
		}
		if ev.Task != "" {
			seen[ev.Task] = append(seen[ev.Task], traced{ev.Kind, ev.Time})
		}
	}
	raw, err := os.ReadFile(stamps)
	if err != nil {
		return nil, err
	}
	var ms []float64
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, err
		}
		if t, ok := landed[f[0]]; ok {
			ms = append(ms, float64(t.UnixNano()-ns)/1e6)
			if trace {
				printTrace(f[0], ns, seen[f[0]])
			}
		}
	}
	if len(ms) != b.n {
		return nil, fmt.Errorf("%d of %d tasks landed with a stamp: %s", len(ms), b.n, tailOf(out.String(), 3000))
	}
	return ms, nil
}

// floorLatency prepares b.n branches with one commit each, then lands them
// from a shell with the floor's commands, returning each landing in ms.
func (b *bench) floorLatency(round int) ([]float64, error) {
	dir, err := b.repo(fmt.Sprintf("floor-%d", round))
	if err != nil {
		return nil, err
	}
	for i := 1; i <= b.n; i++ {
		br := fmt.Sprintf("t%d", i)
		if err := b.git(dir, "checkout", "-q", "-b", br, "main"); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "f-"+br+".txt"), []byte("task"), 0o644); err != nil {
			return nil, err
		}
		if err := b.git(dir, "add", "-A"); err != nil {
			return nil, err
		}
		if err := b.git(dir, "commit", "-q", "-m", "feat: task work"); err != nil {
			return nil, err
		}
	}
	if err := b.git(dir, "checkout", "-q", "main"); err != nil {
		return nil, err
	}
	cmd := exec.Command("sh", "-c", floorScript)
	cmd.Dir = dir
	sig := filepath.Join(filepath.Dir(b.chorus), "chorus-signal")
	if _, err := os.Stat(sig); err != nil {
		sig = b.chorus
	}
	cmd.Env = append(b.env(os.DevNull), "N="+strconv.Itoa(b.n), "SIGNAL="+sig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var ms []float64
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s, e int64
		if _, err := fmt.Sscan(l, &s, &e); err != nil {
			return nil, fmt.Errorf("floor output %q: %v", l, err)
		}
		ms = append(ms, float64(e-s)/1e6)
	}
	return ms, nil
}

// trace ($BENCH_TRACE=1) prints, per task, each of its events' time
// after the stamp taken just before the signal started, in ms.
var trace = os.Getenv("BENCH_TRACE") != ""

type traced struct {
	kind string
	at   time.Time
}

func printTrace(task string, stamp int64, evs []traced) {
	var sb strings.Builder
	for _, ev := range evs {
		if d := float64(ev.at.UnixNano()-stamp) / 1e6; d > -5 {
			fmt.Fprintf(&sb, " %s %.1f", ev.kind, d)
		}
	}
	fmt.Printf("    %s:%s\n", task, sb.String())
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
