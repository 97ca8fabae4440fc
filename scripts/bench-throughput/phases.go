package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// printPhases ($BENCH_TRACE=1 in the throughput mode) reads the engine's
// --json events and prints where a task's wall goes: the median and the
// largest time of each step from one of its events to the next, and how
// long the run took before its first start and after its last landing.
func printPhases(out []byte, start, end time.Time) {
	steps := []string{"agent_assigned", "agent_started", "signal", "merge_enqueued", "merge_landed"}
	at := map[string]map[string]time.Time{}
	for _, ev := range events(out) {
		if ev.Task == "" {
			continue
		}
		if at[ev.Task] == nil {
			at[ev.Task] = map[string]time.Time{}
		}
		if _, ok := at[ev.Task][ev.Kind]; !ok {
			at[ev.Task][ev.Kind] = ev.Time
		}
	}
	var first, last time.Time
	for _, t := range at {
		if a, ok := t[steps[0]]; ok && (first.IsZero() || a.Before(first)) {
			first = a
		}
		if l, ok := t[steps[len(steps)-1]]; ok && l.After(last) {
			last = l
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "    phases (ms, median/max over %d tasks): start→first assigned %.0f", len(at), ms(first.Sub(start)))
	for i := 1; i < len(steps); i++ {
		var d []float64
		for _, t := range at {
			a, ok1 := t[steps[i-1]]
			b, ok2 := t[steps[i]]
			if ok1 && ok2 {
				d = append(d, ms(b.Sub(a)))
			}
		}
		if len(d) == 0 {
			continue
		}
		sort.Float64s(d)
		fmt.Fprintf(&sb, ", %s→%s %.0f/%.0f", short(steps[i-1]), short(steps[i]), d[len(d)/2], d[len(d)-1])
	}
	fmt.Fprintf(&sb, ", last landed→exit %.0f", ms(end.Sub(last)))
	fmt.Println(sb.String())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func short(kind string) string {
	if i := strings.LastIndexByte(kind, '_'); i >= 0 {
		return kind[i+1:]
	}
	return kind
}

// event is one line of a headless run's --json output, as the benchmarks
// read it.
type event struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	Task string    `json:"task"`
}

// events parses out's event lines; other lines are skipped.
func events(out []byte) []event {
	var evs []event
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			evs = append(evs, ev)
		}
	}
	return evs
}
