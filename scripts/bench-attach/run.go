package main

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
)

// side is one thing attached to: tmux, or a Chorus engine.
type side struct {
	name    string
	argv    []string // the client
	env     []string
	servers func() []int // the processes holding the agents' terminals
}

// trace ($BENCH_TRACE=1) prints when each chunk of a client's output
// arrives and its size, on stderr.
var trace = os.Getenv("BENCH_TRACE") != ""

var clientEnv = []string{"TERM=xterm-256color", "COLORTERM=truecolor"}

func run(lines, rounds int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bench-attach")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	tm, stopTmux, err := startTmux(exe, tmp, lines)
	defer stopTmux()
	if err != nil {
		return err
	}
	sides := []side{tm}
	for _, r := range []struct{ name, env string }{{"chorus", "BENCH_CHORUS"}, {"chorus@base", "BENCH_CHORUS_BASE"}} {
		ch := os.Getenv(r.env)
		if ch == "" {
			continue
		}
		s, stop, err := startReal(r.name, ch, exe, filepath.Join(tmp, r.name), lines)
		defer stop()
		if err != nil {
			return err
		}
		sides = append(sides, s)
	}
	// The engine stand-in: the remote package serving emulators, attached
	// to by the real ui package in a small client.
	bins := []struct{ name, exe string }{{"ui+remote", exe}}
	if base := os.Getenv("BENCH_BASE"); base != "" {
		bins = append(bins, struct{ name, exe string }{"ui+remote@base", base})
	}
	for i, b := range bins {
		s, stop, err := startChorus(b.name, b.exe, filepath.Join(tmp, "engine"+strconv.Itoa(i)+".sock"), lines)
		defer stop()
		if err != nil {
			return err
		}
		sides = append(sides, s)
	}

	// A first attach each: Chorus's resizes the agents to its tiles.
	for _, s := range sides {
		d, p, err := timeAttach(s)
		if err != nil {
			return err
		}
		p.Stop(time.Second)
		fmt.Printf("first attach  %-12s %6.3f s\n", s.name, d.Seconds())
	}
	before := map[string]int{}
	for _, s := range sides {
		before[s.name], _ = memoryOf(s.servers())
	}
	times := map[string][]float64{}
	// Memory of server + client, with the client attached a second, each
	// round: Go's heap is measured as users get it, between collections.
	type mem struct{ server, client [2]int } // VmRSS, Pss in kB
	mems := map[string][]mem{}
	parts := map[string]map[string][]float64{} // side → process name → Pss, MB
	for r := range rounds {
		for k := range sides {
			s := sides[(k+r)%len(sides)] // a different side first each round
			d, p, err := timeAttach(s)
			if err != nil {
				return err
			}
			times[s.name] = append(times[s.name], d.Seconds())
			time.Sleep(time.Second)
			var m mem
			m.server[0], m.server[1] = memoryOf(s.servers())
			m.client[0], m.client[1] = memory(p.Pid())
			mems[s.name] = append(mems[s.name], m)
			if parts[s.name] == nil {
				parts[s.name] = map[string][]float64{}
			}
			for name, kb := range pssByName(s.servers(), p.Pid()) {
				parts[s.name][name] = append(parts[s.name][name], mb(kb))
			}
			p.Stop(time.Second)
		}
	}
	fmt.Printf("attach until every agent's last line shows, %d agents x %d lines, %d rounds (median, min-max):\n", agents, lines, rounds)
	for _, s := range sides {
		fmt.Printf("  %-12s %s s\n", s.name, stats(times[s.name]))
	}
	for _, s := range sides[1:] {
		var ratio []float64
		for i := range times[s.name] {
			ratio = append(ratio, times[s.name][i]/times[tm.name][i])
		}
		fmt.Printf("  %s / tmux: %s\n", s.name, stats(ratio))
	}
	fmt.Printf("memory with one client attached, MB (median, min-max of %d rounds):\n", rounds)
	sum := func(m mem, k int) float64 { return mb(m.server[k] + m.client[k]) }
	for _, s := range sides {
		server, client := "tmux server", "client"
		if s.name != tm.name {
			server, client = "engine", "TUI"
			if s.name == "chorus" {
				server = "engine+hosts"
			}
		}
		col := func(f func(mem) float64) string {
			var v []float64
			for _, m := range mems[s.name] {
				v = append(v, f(m))
			}
			return stats(v)
		}
		fmt.Printf("  %-12s RSS: %s %s, %s %s, sum %s; Pss sum %s; %s RSS after the first attach %.1f\n", s.name,
			server, col(func(m mem) float64 { return mb(m.server[0]) }), client, col(func(m mem) float64 { return mb(m.client[0]) }),
			col(func(m mem) float64 { return sum(m, 0) }), col(func(m mem) float64 { return sum(m, 1) }), server, mb(before[s.name]))
	}
	fmt.Printf("Pss by process, MB (median, min-max):\n")
	for _, s := range sides {
		names := slices.Sorted(maps.Keys(parts[s.name]))
		var out []string
		for _, n := range names {
			out = append(out, n+" "+stats(parts[s.name][n]))
		}
		fmt.Printf("  %-12s %s\n", s.name, strings.Join(out, ", "))
	}
	for _, s := range sides[1:] {
		var rss, pss []float64
		for i, m := range mems[s.name] {
			t := mems[tm.name][i]
			rss = append(rss, sum(m, 0)/sum(t, 0))
			pss = append(pss, sum(m, 1)/sum(t, 1))
		}
		fmt.Printf("  %s / tmux (server + client): RSS %s, Pss %s\n", s.name, stats(rss), stats(pss))
	}
	return nil
}

// startTmux starts a tmux server with the printers in 8 tiled panes of
// one 200x60 window, history-limit as the engine's scrollback, and waits
// until every pane shows its END line.
func startTmux(exe, tmp string, lines int) (side, func(), error) {
	sock := filepath.Join(tmp, "tmux.sock")
	conf := filepath.Join(tmp, "tmux.conf")
	stop := func() { _, _ = waitCmd("tmux", "-S", sock, "kill-server") }
	s := side{name: "tmux", argv: []string{"tmux", "-S", sock, "attach", "-t", "bench"}, env: clientEnv}
	if err := os.WriteFile(conf, []byte("set -g history-limit "+strconv.Itoa(scrollback)+"\n"), 0o600); err != nil {
		return s, stop, err
	}
	printer := func(i int) string { return fmt.Sprintf("%s print %d %d", exe, lines, i) }
	if _, err := waitCmd("tmux", "-S", sock, "-f", conf, "new-session", "-d", "-s", "bench", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), printer(0)); err != nil {
		return s, stop, err
	}
	for i := 1; i < agents; i++ {
		if _, err := waitCmd("tmux", "-S", sock, "split-window", "-t", "bench", printer(i)); err != nil {
			return s, stop, err
		}
		if _, err := waitCmd("tmux", "-S", sock, "select-layout", "-t", "bench", "tiled"); err != nil {
			return s, stop, err
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, err := waitCmd("sh", "-c", "for p in $(tmux -S "+sock+" list-panes -t bench -F '#{pane_id}'); do tmux -S "+sock+" capture-pane -p -t $p; done")
		if err != nil {
			return s, stop, err
		}
		if missing(out) == "" {
			break
		}
		if time.Now().After(deadline) {
			return s, stop, fmt.Errorf("tmux's panes did not all show their last line in 5 minutes (%s missing)", missing(out))
		}
		time.Sleep(200 * time.Millisecond)
	}
	pid, err := waitCmd("tmux", "-S", sock, "display", "-p", "#{pid}")
	if err != nil {
		return s, stop, err
	}
	server, _ := strconv.Atoi(pid)
	s.servers = func() []int { return []int{server} }
	return s, stop, nil
}

// startChorus starts exe's engine stand-in and waits until it is ready.
func startChorus(name, exe, sock string, lines int) (side, func(), error) {
	env := append(os.Environ(), "BENCH_SOCK="+sock)
	s := side{name: name, argv: []string{exe, "attach"}, env: slices.Concat(clientEnv, []string{"BENCH_SOCK=" + sock})}
	cmd := exec.Command(exe, "serve", strconv.Itoa(lines))
	cmd.Env = env
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return s, func() {}, err
	}
	if err := cmd.Start(); err != nil {
		return s, func() {}, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("the engine said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			return s, stop, fmt.Errorf("%s's engine: %w", name, err)
		}
	case <-time.After(5 * time.Minute):
		return s, stop, fmt.Errorf("%s's engine was not ready in 5 minutes", name)
	}
	s.servers = func() []int { return []int{cmd.Process.Pid} }
	return s, stop, nil
}

// timeAttach starts the side's client on a 200x60 PTY that answers like a
// terminal and returns how long until every agent's END line is on it.
func timeAttach(s side) (time.Duration, *ptyproc.Proc, error) {
	start := time.Now()
	if trace {
		fmt.Fprintf(os.Stderr, "%d start %s\n", start.UnixMicro(), s.name)
	}
	p, err := ptyproc.Start(ptyproc.Spec{Argv: s.argv, Env: s.env, Cols: cols, Rows: rows, Coalesce: -1, LogCap: -1})
	if err != nil {
		return 0, nil, err
	}
	screen := term.New(cols, rows, term.WithScrollback(0), term.WithReplies(p))
	var dump *os.File
	if d := os.Getenv("BENCH_DUMP"); d != "" {
		dump, _ = os.Create(fmt.Sprintf("%s/%s-%d", d, s.name, start.UnixMicro()))
		defer dump.Close()
	}
	timeout := time.After(60 * time.Second)
	for {
		select {
		case chunk, ok := <-p.Output():
			if !ok {
				return 0, nil, fmt.Errorf("%s's client ended before it showed the agents:\n%s", s.name, screen.Text())
			}
			screen.Write(chunk)
			if dump != nil {
				fmt.Fprintf(dump, "\n=== %d %d\n", time.Since(start).Microseconds(), len(chunk))
				dump.Write(chunk)
			}
			if trace {
				fmt.Fprintf(os.Stderr, "%d out %d %s\n", time.Now().UnixMicro(), len(chunk), s.name)
			}
			// Output already waiting is parsed before the screen is read:
			// reading it after every chunk of a frame timed this driver.
			if len(p.Output()) > 0 {
				continue
			}
			// Inside a synchronized update a terminal still shows the
			// frame before it.
			if missing(screen.Text()) == "" && !screen.SyncHeld(time.Now()) {
				if trace {
					fmt.Fprintf(os.Stderr, "%d shown %s\n", time.Now().UnixMicro(), s.name)
				}
				return time.Since(start), p, nil
			}
		case <-timeout:
			p.Stop(time.Second)
			return 0, nil, errors.New(s.name + "'s client did not show every agent's last line in 60 s:\n" + screen.Text())
		}
	}
}

// missing is the first END marker not in text ("" when all are).
func missing(text string) string {
	for i := range agents {
		if m := "END-" + strconv.Itoa(i); !strings.Contains(text, m) {
			return m
		}
	}
	return ""
}

// memory is a process's VmRSS and Pss in kB (0 when unreadable).
func memory(pid int) (rss, pss int) {
	field := func(path, name string) int {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == name+":" {
				n, _ := strconv.Atoi(f[1])
				return n
			}
		}
		return 0
	}
	return field(fmt.Sprintf("/proc/%d/status", pid), "VmRSS"), field(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss")
}

// pssByName sums the Pss of servers by their command's name (×N when
// several share one), the client's as "client".
func pssByName(servers []int, client int) map[string]int {
	kb, count := map[string]int{}, map[string]int{}
	for _, pid := range servers {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		name := strings.TrimSpace(string(b))
		_, p := memory(pid)
		kb[name] += p
		count[name]++
	}
	_, kb["client"] = memory(client)
	out := map[string]int{}
	for n, v := range kb {
		if count[n] > 1 {
			n = fmt.Sprintf("%s x%d", n, count[n])
		}
		out[n] = v
	}
	return out
}

// memoryOf sums memory over processes.
func memoryOf(pids []int) (rss, pss int) {
	for _, pid := range pids {
		r, p := memory(pid)
		rss, pss = rss+r, pss+p
	}
	return rss, pss
}

func mb(kb int) float64 { return float64(kb) / 1024 }

// stats is "median (min-max)".
func stats(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.3f (%.3f-%.3f)", med, s[0], s[len(s)-1])
}
