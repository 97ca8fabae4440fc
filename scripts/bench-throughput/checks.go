package main

// The checks mode: AGENTS agents finishing together, each task's required
// check run in its worktree and once more on the batch; from the last
// COMPLETE signal to the last landing, against the batching ideal measured
// in the same round: a shell that runs the check AGENTS times in parallel
// (the worktrees' checks), merges the branches one on another in-process
// of git (merge-tree, commit-tree), runs the check once on the end and
// moves main once.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

const idealScript = `set -eu
s=$(date +%s%N)
for i in $(seq "$N"); do (cd ".worktrees/t$i" && sh -c "$QUALITY") & done
wait
tip=$(git rev-parse main)
for i in $(seq "$N"); do
	tree=$(git merge-tree --write-tree "$tip" "t$i")
	tip=$(git commit-tree "$tree" -p "$tip" -p "t$i" -m "Merge t$i")
done
d=.worktrees/batch # inside the round's repository, removed with it
git worktree add -q --detach "$d" "$tip"
(cd "$d" && sh -c "$QUALITY")
git update-ref refs/heads/main "$tip"
echo "$s $(date +%s%N)"
`

func runChecks(b *bench, rounds int) {
	var ratios, chs, ids []float64
	for r := range rounds {
		ch, err := b.chorusChecks(r)
		if err != nil {
			fail(fmt.Errorf("chorus with checks: %w", err))
		}
		id, err := b.idealChecks(r)
		if err != nil {
			fail(fmt.Errorf("ideal: %w", err))
		}
		chs, ids, ratios = append(chs, ch), append(ids, id), append(ratios, ch/id)
		fmt.Printf("  round %d: last signal→last landing %.2f s, ideal %.2f s: %.2f×\n", r+1, ch, id, ch/id)
	}
	fmt.Printf("%d agents × check %q: %.2f s, ideal %.2f s; ratio median %.2f× (%.2f–%.2f, %d rounds)\n",
		b.agents, b.quality, medianOf(chs), medianOf(ids), medianOf(ratios), minOf(ratios), maxOf(ratios), rounds)
}

// chorusChecks runs one autopilot session of b.agents tasks on as many
// agents and returns the seconds from the last COMPLETE to the last landing.
func (b *bench) chorusChecks(round int) (float64, error) {
	dir, err := b.setupChorus(fmt.Sprintf("chorus-checks-%d", round), b.quality, false)
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(b.chorus, "-C", dir, "--autopilot", "--headless", "--json", "--max-agents", strconv.Itoa(b.agents))
	cmd.Env = b.env(os.DevNull)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %s", err, tailOf(out.String(), 3000))
	}
	var lastSignal, lastLanding time.Time
	landed := 0
	var order []string
	seen := map[string][]traced{} // BENCH_TRACE: each task's events in order
	for _, ev := range events(out.Bytes()) {
		if trace {
			if _, ok := seen[ev.Task]; !ok {
				order = append(order, ev.Task)
			}
			seen[ev.Task] = append(seen[ev.Task], traced{ev.Kind, ev.Time})
		}
		switch ev.Kind {
		case "signal":
			lastSignal = ev.Time
		case "merge_landed":
			lastLanding, landed = ev.Time, landed+1
		}
	}
	if landed != b.n {
		return 0, fmt.Errorf("%d of %d tasks landed: %s", landed, b.n, tailOf(out.String(), 3000))
	}
	if trace {
		// In ms after the first signal, where the last one is at:
		first := lastSignal
		for _, evs := range seen {
			for _, ev := range evs {
				if ev.kind == "signal" && ev.at.Before(first) {
					first = ev.at
				}
			}
		}
		fmt.Printf("    last signal at %.1f ms\n", float64(lastSignal.Sub(first))/1e6)
		for _, t := range order {
			name := t
			if name == "" {
				name = "(engine)"
			}
			printTrace(name, first.UnixNano(), seen[t])
		}
	}
	return lastLanding.Sub(lastSignal).Seconds(), nil
}

// idealChecks prepares b.n branches in worktrees and times idealScript.
func (b *bench) idealChecks(round int) (float64, error) {
	dir, err := b.repo(fmt.Sprintf("ideal-%d", round))
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("/.worktrees/\n"), 0o644); err != nil {
		return 0, err
	}
	for i := 1; i <= b.n; i++ {
		br := fmt.Sprintf("t%d", i)
		wt := filepath.Join(dir, ".worktrees", br)
		if err := b.git(dir, "worktree", "add", "-q", "-b", br, wt, "main"); err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(wt, "f-"+br+".txt"), []byte("task"), 0o644); err != nil {
			return 0, err
		}
		if err := b.git(wt, "add", "-A"); err != nil {
			return 0, err
		}
		if err := b.git(wt, "commit", "-q", "-m", "feat: task work"); err != nil {
			return 0, err
		}
	}
	cmd := exec.Command("sh", "-c", idealScript)
	cmd.Dir = dir
	cmd.Env = append(b.env(os.DevNull), "N="+strconv.Itoa(b.n), "QUALITY="+b.quality)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, out)
	}
	var s, e int64
	if _, err := fmt.Sscan(string(out), &s, &e); err != nil {
		return 0, fmt.Errorf("ideal output %q: %v", out, err)
	}
	return float64(e-s) / 1e9, nil
}
