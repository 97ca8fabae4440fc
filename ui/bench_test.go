package ui

import (
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
)

// BenchmarkKeyLatency measures keypress to screen update with 8 busy
// tiles, each fed a recorded Claude Code stream in a loop at 10x an
// assumed real rate of 600 bytes/s, on a 200x60 simulation screen. It
// reports p50 and p99 of the time from injecting j/k to the end of the
// first draw that follows the key's handler.
func BenchmarkKeyLatency(b *testing.B) {
	data, err := os.ReadFile("term/testdata/replay/claude-fullscreen/stream.raw")
	if err != nil {
		b.Fatal(err)
	}
	snap := orchestrator.Snapshot{MaxParallel: 8, Running: 8}
	snap.Mode = config.ModeSemiAuto
	snap.Agents = map[string]*orchestrator.AgentState{}
	f := newFakeEngine(snap)
	for i := range 8 {
		id := fmt.Sprintf("claude-t-%d", i)
		f.snap.Agents[id] = &orchestrator.AgentState{ID: id, Type: "claude", TaskID: fmt.Sprintf("t-%d", i), Iteration: 1, Status: orchestrator.AgentRunning}
		f.screens[id] = term.New(80, 24, term.WithScrollback(5000))
	}
	st := &fakeStore{}
	d := startUI(b, Options{Engine: f, Store: st, Config: config.Default()}, 200, 60)
	stop := make(chan struct{})
	defer close(stop)
	const rate = 6000
	for _, emu := range f.screens {
		emu := emu
		go func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			off := 0
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				n := min(rate/100, len(data)-off)
				emu.Write(data[off : off+n])
				if off += n; off == len(data) {
					off = 0
				}
			}
		}()
	}
	var want atomic.Int64
	drawn := make(chan struct{}, 1)
	d.ui(func() {
		d.u.afterFn = func() {
			if w := want.Load(); w != 0 && d.u.keySeq.Load() >= w {
				want.Store(0)
				drawn <- struct{}{}
			}
		}
	})
	lat := make([]time.Duration, 0, b.N)
	keys := []rune{'j', 'k'}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		want.Store(d.u.keySeq.Load() + 1)
		t0 := time.Now()
		d.sim.InjectKey(tcell.KeyRune, keys[i%2], 0)
		<-d.u.keyDone
		<-drawn
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
