package ui

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/gdamore/tcell/v2"
)

// keySpec identifies one key: a special key, or a rune with modifiers.
type keySpec struct {
	key  tcell.Key
	r    rune
	mods tcell.ModMask // only Alt is significant for runes
}

func (k keySpec) String() string {
	if k.key == tcell.KeyRune {
		name := string(k.r)
		if k.r == ' ' {
			name = "Space"
		}
		if k.mods&tcell.ModAlt != 0 {
			name = "Alt-" + name
		}
		return name
	}
	if n, ok := keyNames[k.key]; ok {
		return n
	}
	if k.key >= tcell.KeyCtrlA && k.key <= tcell.KeyCtrlZ {
		return "Ctrl-" + string(rune('A'+k.key-tcell.KeyCtrlA))
	}
	return fmt.Sprintf("key %d", k.key)
}

var keyNames = map[tcell.Key]string{
	tcell.KeyUp: "↑", tcell.KeyDown: "↓", tcell.KeyLeft: "←", tcell.KeyRight: "→",
	tcell.KeyTab: "Tab", tcell.KeyBacktab: "Shift-Tab", tcell.KeyEnter: "Enter", tcell.KeyEsc: "Esc",
	tcell.KeyCtrlBackslash: "Ctrl-\\", tcell.KeyCtrlRightSq: "Ctrl-]", tcell.KeyPgUp: "PgUp", tcell.KeyPgDn: "PgDn",
}

// parseKey reads the config's key syntax: a single character, a name
// (Enter, Tab, Space, Up, Down, Esc), Ctrl-X or Alt-X.
func parseKey(s string) (keySpec, error) {
	switch s {
	case "Enter":
		return keySpec{key: tcell.KeyEnter}, nil
	case "Tab":
		return keySpec{key: tcell.KeyTab}, nil
	case "Shift-Tab":
		return keySpec{key: tcell.KeyBacktab}, nil
	case "Esc":
		return keySpec{key: tcell.KeyEsc}, nil
	case "Space":
		return keySpec{key: tcell.KeyRune, r: ' '}, nil
	case "Up":
		return keySpec{key: tcell.KeyUp}, nil
	case "Down":
		return keySpec{key: tcell.KeyDown}, nil
	case "PgUp":
		return keySpec{key: tcell.KeyPgUp}, nil
	case "PgDn":
		return keySpec{key: tcell.KeyPgDn}, nil
	}
	if rest, ok := strings.CutPrefix(s, "Ctrl-"); ok && len([]rune(rest)) == 1 {
		c := []rune(rest)[0]
		switch {
		case c == '\\':
			return keySpec{key: tcell.KeyCtrlBackslash}, nil
		case c == ']':
			return keySpec{key: tcell.KeyCtrlRightSq}, nil
		case unicode.IsLetter(c) && c < 128:
			return keySpec{key: tcell.KeyCtrlA + tcell.Key(unicode.ToLower(c)-'a')}, nil
		}
	}
	if rest, ok := strings.CutPrefix(s, "Alt-"); ok && len([]rune(rest)) == 1 {
		return keySpec{key: tcell.KeyRune, r: []rune(rest)[0], mods: tcell.ModAlt}, nil
	}
	if r := []rune(s); len(r) == 1 {
		return keySpec{key: tcell.KeyRune, r: r[0]}, nil
	}
	return keySpec{}, fmt.Errorf("%q is not a key; use a character, Ctrl-X or Alt-X", s)
}

// specOf normalises an event to a keySpec. tcell reports Ctrl-letters as
// their own keys; Backspace/Tab/Enter keep their names.
func specOf(ev *tcell.EventKey) keySpec {
	if ev.Key() == tcell.KeyRune {
		return keySpec{key: tcell.KeyRune, r: ev.Rune(), mods: ev.Modifiers() & tcell.ModAlt}
	}
	return keySpec{key: ev.Key()}
}

// Key groups, as the seed's shortcut table arranges them.
const (
	groupNav      = "NAVIGATION"
	groupAgent    = "AGENT CONTROL"
	groupMode     = "MODE CONTROL"
	groupTask     = "TASK MANAGEMENT"
	groupView     = "VIEW"
	groupRecovery = "RECOVERY"
	groupGeneral  = "GENERAL"
)

// keyAction is one row of the key table: help, the footer hints and the
// dispatcher are all generated from it.
type keyAction struct {
	Keys      []string // parsed with parseKey
	Label     string   // how help shows the keys, when not just Keys joined
	Group     string
	Desc      string
	Dangerous bool   // asks to confirm before acting
	Hint      bool   // shown in the footer
	HintText  string // the footer's word for it, when not Desc's first
	Run       func(u *UI, ev *tcell.EventKey)
}

// defaultKeys is every Chorus key of the main view. (A func, not a var:
// the handlers reach back to the table for help.)
func defaultKeys() []keyAction {
	return []keyAction{
		{Keys: []string{"j", "Down"}, Label: "j/↓", Group: groupNav, Desc: "Move down", Run: func(u *UI, _ *tcell.EventKey) { u.move(1) }},
		{Keys: []string{"k", "Up"}, Label: "k/↑", Group: groupNav, Desc: "Move up", Run: func(u *UI, _ *tcell.EventKey) { u.move(-1) }},
		{Keys: []string{"Tab", "Shift-Tab"}, Label: "Tab", Group: groupNav, Desc: "Switch panels", Hint: true, Run: func(u *UI, _ *tcell.EventKey) { u.togglePanel() }},
		{Keys: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, Label: "1-9", Group: groupNav, Desc: "Quick select", Run: func(u *UI, ev *tcell.EventKey) { u.quickSelect(int(ev.Rune() - '1')) }},

		{Keys: []string{"s"}, Group: groupAgent, Desc: "Spawn agent for task", Run: func(u *UI, _ *tcell.EventKey) { u.spawn() }},
		{Keys: []string{"x"}, Group: groupAgent, Desc: "Stop selected agent", Dangerous: true, Run: func(u *UI, _ *tcell.EventKey) { u.stopAgent() }},
		{Keys: []string{"r"}, Group: groupAgent, Desc: "Redirect agent (failed task: retry)", Run: func(u *UI, _ *tcell.EventKey) { u.redirectOrRetry() }},
		{Keys: []string{"Enter"}, Group: groupAgent, Desc: "Assign task to agent", Hint: true, Run: func(u *UI, _ *tcell.EventKey) { u.assign("") }},
		{Keys: []string{"Ctrl-C"}, Group: groupAgent, Desc: "Kill all agents", Dangerous: true, Run: func(u *UI, _ *tcell.EventKey) { u.killAll() }},

		{Keys: []string{"m"}, Group: groupMode, Desc: "Toggle semi-auto/autopilot", Run: func(u *UI, _ *tcell.EventKey) { u.toggleMode() }},
		{Keys: []string{"Space"}, Group: groupMode, Desc: "Pause/resume", Run: func(u *UI, _ *tcell.EventKey) { u.togglePause() }},
		{Keys: []string{"a"}, Group: groupMode, Desc: "Start autopilot", Run: func(u *UI, _ *tcell.EventKey) { u.startAutopilot() }},

		{Keys: []string{"n"}, Group: groupTask, Desc: "New task", Run: func(u *UI, _ *tcell.EventKey) { u.newTask() }},
		{Keys: []string{"e"}, Group: groupTask, Desc: "Edit task", Run: func(u *UI, _ *tcell.EventKey) { u.editTask() }},
		{Keys: []string{"b"}, Group: groupTask, Desc: "Block task", Dangerous: true, Run: func(u *UI, _ *tcell.EventKey) { u.blockTask() }},
		{Keys: []string{"d"}, Group: groupTask, Desc: "Mark done (manual)", Dangerous: true, Run: func(u *UI, _ *tcell.EventKey) { u.markDone() }},
		{Keys: []string{"T"}, Group: groupTask, Desc: "Task timeline", Run: func(u *UI, _ *tcell.EventKey) { u.showTimeline() }},

		{Keys: []string{"f"}, Group: groupView, Desc: "Fullscreen agent", Run: func(u *UI, _ *tcell.EventKey) { u.toggleFull() }},
		{Keys: []string{"g"}, Group: groupView, Desc: "Grid layout (cycle)", Run: func(u *UI, _ *tcell.EventKey) { u.cycleGrid() }},
		{Keys: []string{"PgUp", "PgDn"}, Label: "PgUp/Dn", Group: groupView, Desc: "Scroll the selected agent's history", Run: func(u *UI, ev *tcell.EventKey) { u.scrollAgent(ev.Key()) }},
		{Keys: []string{"["}, Group: groupView, Desc: "Copy mode: move, search (/), select (v), copy (Enter)", Run: func(u *UI, _ *tcell.EventKey) { u.enterCopy("") }},
		{Keys: []string{"X"}, Group: groupView, Desc: "Close a finished agent's tile", Run: func(u *UI, _ *tcell.EventKey) { u.closeFinished() }},
		{Keys: []string{"l"}, Group: groupView, Desc: "View logs", Run: func(u *UI, _ *tcell.EventKey) { u.showLogs() }},
		{Keys: []string{"D"}, Group: groupView, Desc: "Diff of the task's work", Run: func(u *UI, _ *tcell.EventKey) { u.showDiff(u.currentTask()) }},
		{Keys: []string{"L"}, Group: groupView, Desc: "View learnings", Run: func(u *UI, _ *tcell.EventKey) { u.showLearnings() }},

		{Keys: []string{"R"}, Group: groupRecovery, Desc: "Rollback menu", Run: func(u *UI, _ *tcell.EventKey) { u.showRollback() }},
		{Keys: []string{"c"}, Group: groupRecovery, Desc: "Create checkpoint", Run: func(u *UI, _ *tcell.EventKey) { u.checkpoint() }},
		{Keys: []string{"u"}, Group: groupRecovery, Desc: "Undo your last action, if undoable (below)", Run: func(u *UI, _ *tcell.EventKey) { u.undoLast() }},

		{Keys: []string{"?"}, Group: groupGeneral, Desc: "Toggle help", Hint: true, HintText: "help", Run: func(u *UI, _ *tcell.EventKey) { u.showHelp() }},
		{Keys: []string{"q"}, Group: groupGeneral, Desc: "Quit (confirm if agents)", Hint: true, Run: func(u *UI, _ *tcell.EventKey) { u.askQuit() }},
		{Keys: []string{"i"}, Group: groupGeneral, Desc: "Intervention menu", Hint: true, Run: func(u *UI, _ *tcell.EventKey) { u.showIntervention() }},
		{Keys: []string{">"}, Group: groupGeneral, Desc: "Chat line: type to the agent", Run: func(u *UI, _ *tcell.EventKey) { u.openChat() }},
		{Keys: []string{"M"}, Group: groupGeneral, Desc: "Merge queue view", Run: func(u *UI, _ *tcell.EventKey) { u.showMerge() }},
	}
}

// keymap is the key table indexed for dispatch.
type keymap struct {
	table []keyAction
	byKey map[keySpec]*keyAction
}

func newKeymap() *keymap {
	km, err := buildKeymap(defaultKeys())
	if err != nil {
		panic(err) // the table is static; its test catches this first
	}
	return km
}

// buildKeymap indexes a table, refusing a key bound twice.
func buildKeymap(table []keyAction) (*keymap, error) {
	km := &keymap{table: table, byKey: map[keySpec]*keyAction{}}
	for i := range table {
		a := &table[i]
		for _, k := range a.Keys {
			ks, err := parseKey(k)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.Desc, err)
			}
			if prev, dup := km.byKey[ks]; dup {
				return nil, fmt.Errorf("key %s is bound to both %q and %q", k, prev.Desc, a.Desc)
			}
			km.byKey[ks] = a
		}
	}
	return km, nil
}

func (km *keymap) has(k keySpec) bool { _, ok := km.byKey[k]; return ok }

func (km *keymap) lookup(ev *tcell.EventKey) *keyAction { return km.byKey[specOf(ev)] }

// label is how help and hints name an action's keys.
func (a keyAction) label() string {
	if a.Label != "" {
		return a.Label
	}
	return strings.Join(a.Keys, "/")
}

// helpText is the help overlay, generated from the key table.
func helpText(table []keyAction, prefix string) string {
	var b strings.Builder
	var groups []string
	byGroup := map[string][]keyAction{}
	for _, a := range table {
		if _, ok := byGroup[a.Group]; !ok {
			groups = append(groups, a.Group)
		}
		byGroup[a.Group] = append(byGroup[a.Group], a)
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "%s\n", g)
		for _, a := range byGroup[g] {
			desc := a.Desc
			if a.Dangerous {
				desc += " (asks first)"
			}
			fmt.Fprintf(&b, "  %-7s %s\n", a.label(), desc)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "AGENT KEYS\n  %-7s Type into the selected agent (from any screen); press it again to give keys back\n", prefix)
	b.WriteString("          While typing: twice sends it to the agent; then [ is copy mode; then d asks whether to detach (attached)\n")
	b.WriteString("  Mouse   Click a tile to select it; the wheel scrolls its output\n")
	b.WriteString("\nIN DIALOGS (docs/keys.md)\n")
	b.WriteString("  m       In i (intervention) or M (merge queue): approve the merge\n          waiting for approval; in the main view m is always the mode\n")
	b.WriteString("  r       On a failed task (task panel): retry it; on an agent: redirect\n")
	b.WriteString("  u       Undoes only these, newest first: " + UndoableActions + ";\n          any other action (checkpoint, stop, assign, rollback…) ends the history\n")
	return b.String()
}

// hints is the footer's key reminder, from the table: pinned ("? help",
// "q quit") is always shown, optional (the other hints and the prefix key)
// as far as there is room.
func hints(table []keyAction, prefix string) (pinned, optional string) {
	var pin, opt []string
	for _, a := range table {
		if !a.Hint {
			continue
		}
		word := a.HintText
		if word == "" {
			word = strings.ToLower(strings.SplitN(a.Desc, " ", 2)[0])
		}
		if k := a.label(); k == "?" || k == "q" {
			pin = append(pin, k+" "+word)
		} else {
			opt = append(opt, k+" "+word)
		}
	}
	opt = append(opt, prefix+" type to agent")
	return strings.Join(pin, " · "), strings.Join(opt, " · ")
}
