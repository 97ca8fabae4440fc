package ui

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
)

// A terminal opened ahead of an attach that goes no further (no engine)
// is given back without ever showing the alternate screen: the error is
// printed on the screen as it was, with no flash. Taken by a UI, what
// tcell wrote while it was set up reaches the terminal. Each runs in a
// process of its own on a real PTY, tcell on its /dev/tty.
func TestTerminalOpenedAheadShowsNothingUntilTaken(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"close", "take"} {
		t.Run(mode, func(t *testing.T) {
			p, err := ptyproc.Start(ptyproc.Spec{Argv: []string{exe, "-test.run=^TestTerminalHelper$", "-test.timeout=1m"},
				Env: []string{"CHORUS_TERMINAL_HELPER=" + mode, "TERM=xterm-256color", "LANG=C.UTF-8"}, Cols: 80, Rows: 24, LogCap: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop(time.Second)
			var out strings.Builder
			timeout := time.After(waitLimit)
		read:
			for {
				select {
				case b, ok := <-p.Output():
					if !ok {
						break read
					}
					out.Write(b)
				case <-timeout:
					t.Fatalf("the helper did not end:\n%q", out.String())
				}
			}
			got := out.String()
			if !strings.Contains(got, "helper done") {
				t.Fatalf("the helper failed:\n%q", got)
			}
			alt := strings.Contains(got, "\x1b[?1049h")
			if mode == "close" && alt {
				t.Fatalf("the terminal entered the alternate screen though no UI took it:\n%q", got)
			}
			if mode == "take" && !alt {
				t.Fatalf("the terminal a UI took never entered the alternate screen:\n%q", got)
			}
		})
	}
}

// TestTerminalHelper is the process TestTerminalOpenedAheadShowsNothingUntilTaken
// runs: it opens the terminal ahead, then closes it (as attach does with
// no engine) or takes it and ends it (as a UI does).
func TestTerminalHelper(t *testing.T) {
	mode := os.Getenv("CHORUS_TERMINAL_HELPER")
	if mode == "" {
		t.Skip("run by TestTerminalOpenedAheadShowsNothingUntilTaken")
	}
	term := OpenTerminal()
	switch mode {
	case "close":
		term.Close()
	case "take":
		s, _, err := term.take()
		if err != nil {
			t.Fatal(err)
		}
		s.Fini()
	}
	fmt.Println("helper done")
}
