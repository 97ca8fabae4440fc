package signal_test

import (
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/term"
)

// echoLines renders text as an interactive CLI echoes the user's message:
// "> " before the first line, two spaces before the others, hard-wrapped
// (explicit newlines) at width.
func echoLines(text string, width int) []string {
	var out []string
	prefix := "> "
	for _, pl := range strings.Split(text, "\n") {
		line := ""
		for _, w := range strings.Fields(pl) {
			if line != "" && len(prefix)+len(line)+1+len(w) > width {
				out = append(out, prefix+line)
				prefix, line = "  ", ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		out = append(out, prefix+line)
		prefix = "  "
	}
	return out
}

// The prompt an agent is given changes over a task's life: the first
// prompt, the handover of a respawn (after a stop and a redirect), the
// prompt rebuilt after a person edits the task. Each is registered with
// the detector before the agent sees it; their echoes, on a real
// emulator whose width then shrinks and grows (a tile resized when the
// grid changes: rows already shown are reflowed), never count. What the agent itself prints alone on its line
// still does.
func TestEchoHoldsAcrossRespawnsEditsAndResizes(t *testing.T) {
	first := "# Task: ch-7\nSay hello.\nWhen done run chorus signal COMPLETE. If the task needs no change, output on its own line:\n<chorus>COMPLETE: nothing to change: why</chorus>\nIf blocked, output:\n<chorus>BLOCKED: reason</chorus>"
	handover := "This is iteration 3 of the task. You stopped before; the task was redirected back to you.\n\n" + first
	edited := strings.Replace(first, "Say hello.", "Say hello and goodbye.", 1) + "\n\nThe task was edited; read it again."

	em := term.New(40, 60, term.WithScrollback(500))
	d := signal.NewDetector(signal.DetectorOptions{Prompts: []string{first}})
	var got []string
	scan := func() {
		for _, f := range d.Snapshot(em.AllText()) {
			got = append(got, f.Raw)
		}
	}
	show := func(text string) {
		for _, l := range echoLines(text, 40) {
			em.Write([]byte(l + "\r\n"))
		}
		scan()
	}
	show(first)
	em.Write([]byte("Working on it.\r\n"))
	scan()
	// Respawn with the handover: registered first, as the engine does.
	d.AddPrompt(handover)
	d.Reset()
	show(handover)
	// The tile narrows: the echoed rows lose their ends.
	em.Resize(22, 60)
	scan()
	// The emulator reflows: the narrowed rows wrap rather than lose their
	// ends, so the echo reads whole and is still known as an echo. (Before
	// reflow, the cut rows made "<chorus>COMPLETE: no why</chorus>".)
	if w, _ := em.Size(); w != 22 || !strings.Contains(em.AllText(), "  <chorus>COMPLETE: nothing to change:\n  why</chorus>") {
		t.Fatalf("the resize did not keep the echo whole:\n%s", em.AllText())
	}
	// The task is edited; the new prompt is typed in.
	d.AddPrompt(edited)
	d.Reset()
	show(edited)
	em.Resize(16, 60)
	scan()
	em.Resize(40, 60)
	scan()
	if len(got) != 0 {
		t.Fatalf("echoes counted as signals: %q\nscreen:\n%s", got, em.AllText())
	}
	// The agent's own signal, alone on its line, counts once.
	em.Write([]byte("All done.\r\n<chorus>COMPLETE</chorus>\r\n"))
	scan()
	scan()
	if strings.Join(got, "|") != "<chorus>COMPLETE</chorus>" {
		t.Fatalf("the agent's own COMPLETE: %q", got)
	}
}
