package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
)

// The key table has every key of the seed's shortcut table, none twice,
// and help and hints are generated from it.
func TestKeyTable(t *testing.T) {
	table := defaultKeys()
	if _, err := buildKeymap(table); err != nil {
		t.Fatal(err)
	}
	km := newKeymap()
	seed := []string{"j", "k", "Down", "Up", "Tab", "1", "9", "Enter", "s", "x", "r", "m", "Space", "a",
		"n", "e", "b", "d", "f", "g", "l", "L", "R", "c", "u", "i", "M", "?", "q"}
	for _, k := range seed {
		ks, err := parseKey(k)
		if err != nil {
			t.Fatal(err)
		}
		if !km.has(ks) {
			t.Errorf("seed key %s is not bound", k)
		}
	}
	help := helpText(table, "Ctrl-G")
	for _, a := range table {
		if a.Desc == "" || a.Group == "" || a.Run == nil {
			t.Errorf("incomplete entry %+v", a)
		}
		if !strings.Contains(help, a.Desc) || !strings.Contains(help, a.label()) {
			t.Errorf("help lacks %q (%s)", a.Desc, a.label())
		}
	}
	if !strings.Contains(help, "Ctrl-G") {
		t.Error("help does not name the prefix key")
	}
	// A duplicate is refused.
	dup := append(append([]keyAction(nil), table...), keyAction{Keys: []string{"q"}, Desc: "again"})
	if _, err := buildKeymap(dup); err == nil {
		t.Error("a key bound twice was accepted")
	}
}

func TestPrefixKeyParsingAndCollision(t *testing.T) {
	for _, k := range []string{"Ctrl-G", "Ctrl-]", "Ctrl-\\", "Alt-x"} {
		if _, err := parseKey(k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	_, _, o := fixture()
	o.Config.TUI.PrefixKey = "Ctrl-C" // kill all
	if _, err := newUI(o); err == nil {
		t.Error("a prefix key that is a Chorus key was accepted")
	}
}

// The help overlay shows the generated text.
func TestHelpOverlayFromTable(t *testing.T) {
	_, _, o := fixture()
	d := startUI(t, o, 150, 80) // tall enough for every key at once
	d.press("?")
	for _, a := range defaultKeys() {
		d.expect(a.Desc)
	}
	d.press("<Esc>")
	if d.overlay() != "" {
		t.Fatal("Esc did not close help")
	}
}

// Dangerous keys ask first: nothing is sent until confirmed, and n
// cancels.
func TestDangerousKeysConfirm(t *testing.T) {
	f, _, o := fixture()
	d := startUI(t, o, 150, 40)
	d.press("<Tab>") // agents panel: claude-ch-2n6 selected
	for _, k := range []string{"x", "d", "<C-c>"} {
		d.press(k)
		if d.overlay() != ovConfirm {
			t.Fatalf("%s: no confirmation (overlay %q)", k, d.overlay())
		}
		d.press("n")
		if n := len(f.commands()); n != 0 {
			t.Fatalf("%s: %d commands sent before confirming", k, n)
		}
	}
	d.press("x", "y")
	if c := f.commands(); len(c) != 1 || c[0].Kind != orchestrator.CmdStop || c[0].AgentID != "claude-ch-2n6" {
		t.Fatalf("commands: %+v", c)
	}
	d.press("<C-c>", "y")
	if c := f.commands(); c[len(c)-1].Kind != orchestrator.CmdKillAll {
		t.Fatalf("commands: %+v", c)
	}
}

// The prefix key hands every key, Chorus keys and Ctrl-C included, to the
// selected agent until pressed again.
func TestPrefixPassesKeysThrough(t *testing.T) {
	f, _, o := fixture()
	d := startUI(t, o, 150, 40)
	d.press("<Tab>", "<C-\\>")
	var pt string
	d.ui(func() { pt = d.u.passthrough })
	if pt != "claude-ch-2n6" {
		t.Fatalf("passthrough = %q", pt)
	}
	d.expect("keys → claude-ch-2n6")
	d.press("q", "x", "?", "<C-c>", "<Enter>")
	if got := f.input("claude-ch-2n6"); got != "qx?\x03\r" {
		t.Fatalf("agent got %q", got)
	}
	if d.overlay() != "" || len(f.commands()) != 0 {
		t.Fatalf("a Chorus key acted during pass-through: overlay %q, %+v", d.overlay(), f.commands())
	}
	d.press("<C-\\>", "?")
	if d.overlay() != ovHelp {
		t.Fatal("keys did not come back to Chorus after the prefix")
	}
}

// A click on a tile selects it; the wheel scrolls its scrollback.
func TestMouseSelectsTileAndScrolls(t *testing.T) {
	f, _, o := fixture()
	emu := f.screens["claude-ch-ah6"]
	for i := 0; i < 100; i++ {
		emu.Write([]byte("line\r\n"))
	}
	d := startUI(t, o, 150, 40)
	var x, y, w, h int
	var tl interface{ ScrollOffset() int }
	d.ui(func() {
		t := d.u.vm.tiles["claude-ch-ah6"]
		tl = t
		x, y, w, h = t.GetInnerRect()
	})
	d.sim.InjectMouse(x+w/2, y+h/2, tcell.Button1, 0)
	d.sim.InjectMouse(x+w/2, y+h/2, 0, 0)
	// tview reads injected events on a goroutine of its own: a sync can
	// come before them, so wait for the selection itself.
	var sel string
	var focus panel
	for limit := time.Now().Add(waitLimit); ; {
		d.sync()
		d.ui(func() { sel, focus = d.u.selAgent, d.u.focus })
		if sel == "claude-ch-ah6" && focus == panelAgents || time.Now().After(limit) {
			break
		}
	}
	if sel != "claude-ch-ah6" || focus != panelAgents {
		t.Fatalf("click at %d,%d did not select the tile: %q %v\n%s", x+w/2, y+h/2, sel, focus, d.text())
	}
	d.sim.InjectMouse(x+w/2, y+h/2, tcell.WheelUp, 0)
	off := 0
	for limit := time.Now().Add(waitLimit); off == 0 && !time.Now().After(limit); {
		d.sync()
		d.ui(func() { off = tl.ScrollOffset() })
	}
	if off == 0 {
		t.Fatal("the wheel did not scroll the tile")
	}
}

// Mode toggle, pause and their undo; block undone with retry; a failing
// command shows its error.
func TestUndo(t *testing.T) {
	f, st, o := fixture()
	f.onDo = func(c orchestrator.Command) {
		switch c.Kind {
		case orchestrator.CmdBlock:
			st.mu.Lock()
			for i := range st.tasks {
				if st.tasks[i].ID == c.TaskID {
					st.tasks[i].Status = beads.StatusBlocked
				}
			}
			st.mu.Unlock()
		case orchestrator.CmdPause:
			f.snap.Paused = true
		case orchestrator.CmdResume:
			f.snap.Paused = false
		case orchestrator.CmdMode:
			f.snap.Mode = c.Text
		}
	}
	d := startUI(t, o, 150, 40)
	d.press("m")
	d.expect("autopilot")
	d.press("<Space>")
	d.expect("PAUSED")
	d.press("u")
	d.expectNot("⏸ PAUSED")
	d.press("u")
	if f.Snapshot().Mode != config.ModeSemiAuto {
		t.Fatal("undo did not restore the mode")
	}
	d.press("j", "j") // ch-3y0 (open)
	d.press("b")
	if d.overlay() != ovPrompt {
		t.Fatalf("block did not ask for a reason: %q", d.overlay())
	}
	d.press("not now", "<Enter>")
	d.press("u")
	c := f.commands()
	if n := len(c); c[n-2].Kind != orchestrator.CmdBlock || c[n-2].Text != "not now" || c[n-1].Kind != orchestrator.CmdRetry || c[n-1].TaskID != c[n-2].TaskID {
		t.Fatalf("block/undo: %+v", c)
	}
	d.press("u")
	d.expect("nothing to undo")
}

// A slow command never freezes the UI: keys keep working while it runs.
func TestSlowCommandDoesNotFreeze(t *testing.T) {
	f, _, o := fixture()
	f.blockDo = make(chan struct{})
	d := startUI(t, o, 150, 40)
	d.sim.InjectKey(tcell.KeyRune, 'c', 0) // checkpoint: blocks in Do
	<-d.u.keyDone
	d.sim.InjectKey(tcell.KeyRune, '?', 0)
	<-d.u.keyDone
	close(f.blockDo)
	d.sync()
	if d.overlay() != ovHelp {
		t.Fatal("help did not open while a command was running")
	}
	if c := f.commands(); len(c) != 1 || c[0].Kind != orchestrator.CmdCheckpoint {
		t.Fatalf("commands: %+v", c)
	}
}

// Deferred tasks are shown but never selected.
func TestDeferredNotSelectable(t *testing.T) {
	_, _, o := fixture()
	d := startUI(t, o, 150, 40)
	for i := 0; i < 10; i++ {
		d.press("j")
		var sel string
		d.ui(func() { sel = d.u.selTask })
		if sel == "ch-v2x" {
			t.Fatal("a deferred task was selected")
		}
	}
	d.expect("deferred")
}

// New task through the form.
func TestNewTaskForm(t *testing.T) {
	_, st, o := fixture()
	d := startUI(t, o, 150, 45)
	d.press("n")
	if d.overlay() != ovNewTask {
		t.Fatalf("overlay %q", d.overlay())
	}
	d.press("Write docs", "<C-s>")
	d.expect("t-new")
	st.mu.Lock()
	last := st.tasks[len(st.tasks)-1]
	st.mu.Unlock()
	if last.Title != "Write docs" || last.Priority != 2 {
		t.Fatalf("created %+v", last)
	}
}

// "Wait" with agents that do not finish ends after the grace period.
func TestQuitWaitForcesAfterGrace(t *testing.T) {
	f, _, o := fixture()
	o.QuitGrace = time.Millisecond
	d := startUI(t, o, 150, 40)
	d.press("q", "w")
	d.quitted()
	if c := f.commands(); len(c) != 1 || c[0].Kind != orchestrator.CmdPause {
		t.Fatalf("commands: %+v", c)
	}
}

// As in tmux: the prefix key twice while typing sends it to the agent
// (which keeps the keyboard), and the default prefix is none of Claude
// Code's keys (Ctrl-G opens its editor, Ctrl-B backgrounds a task).
func TestPrefixTwiceGoesToTheAgent(t *testing.T) {
	f, _, o := fixture()
	if o.Config.TUI.PrefixKey != `Ctrl-\` {
		t.Fatalf("default prefix %q", o.Config.TUI.PrefixKey)
	}
	d := startUI(t, o, 150, 40)
	d.press("<Tab>", "<C-\\>", "a", "<C-\\>", "<C-\\>", "b", "<C-g>")
	if got := f.input("claude-ch-2n6"); got != "a\x1cb\x07" {
		t.Fatalf("agent got %q", got)
	}
	d.expect("keys → claude-ch-2n6")
	d.press("<C-\\>", "?")
	if d.overlay() != ovHelp {
		t.Fatal("keys did not come back to Chorus after one prefix")
	}
}

// The prefix key works from every screen: the chat line and an overlay
// give way to it.
func TestPrefixFromChatLineAndOverlay(t *testing.T) {
	f, _, o := fixture()
	d := startUI(t, o, 150, 40)
	d.press("<Tab>", ">", "x", "<C-\\>", "y")
	if got := f.input("claude-ch-2n6"); got != "y" {
		t.Fatalf("agent got %q after the prefix from the chat line", got)
	}
	d.press("<C-\\>", "?")
	if d.overlay() != ovHelp {
		t.Fatal("no help")
	}
	d.press("<C-\\>", "z")
	if got := f.input("claude-ch-2n6"); got != "yz" || d.overlay() != "" {
		t.Fatalf("agent got %q, overlay %q after the prefix from help", got, d.overlay())
	}
}

// Attached, the prefix then d while typing asks before detaching (the d
// may have been meant for the agent); entering typing mode and typing d
// types it.
func TestPrefixDetachAsks(t *testing.T) {
	f, _, o := fixture()
	d := startUIWith(t, o, 150, 40, func(u *UI) { u.attached = true })
	d.press("<Tab>", "<C-\\>", "d")
	if got := f.input("claude-ch-2n6"); got != "d" || d.overlay() != "" {
		t.Fatalf("agent got %q, overlay %q", got, d.overlay())
	}
	d.press("<C-\\>", "d")
	if d.overlay() != ovChoose {
		t.Fatalf("prefix, d: overlay %q", d.overlay())
	}
	d.expect("Detach")
	d.press("d")
	d.quitted()
	if d.u.outcome != OutcomeDetach {
		t.Fatalf("outcome %v", d.u.outcome)
	}
}

// PgUp/PgDn read the selected agent's history from the keyboard, keys
// staying with Chorus.
func TestKeyboardScrollsAgentHistory(t *testing.T) {
	f, _, o := fixture()
	emu := f.screens["claude-ch-ah6"]
	for i := 0; i < 100; i++ {
		emu.Write([]byte(fmt.Sprintf("line %d\r\n", i)))
	}
	d := startUI(t, o, 150, 40)
	d.press("<Tab>")
	d.ui(func() { d.u.selAgent = "claude-ch-ah6" })
	off := func() (n int) {
		d.ui(func() { n = d.u.vm.tiles["claude-ch-ah6"].ScrollOffset() })
		return n
	}
	d.key(tcell.KeyPgUp, 0, 0)
	d.key(tcell.KeyPgUp, 0, 0)
	if off() == 0 {
		t.Fatal("PgUp did not scroll the selected tile")
	}
	d.expect("[scrollback]")
	if f.input("claude-ch-ah6") != "" {
		t.Fatal("the scroll keys reached the agent")
	}
	d.key(tcell.KeyPgDn, 0, 0)
	d.key(tcell.KeyPgDn, 0, 0)
	if n := off(); n != 0 {
		t.Fatalf("PgDn left the view %d rows back", n)
	}
	d.expectNot("[scrollback]")
}
