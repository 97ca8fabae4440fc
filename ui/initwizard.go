package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/ui/present"
)

// InitCheck is one prerequisite as the caller found it.
type InitCheck struct {
	Name, Detail string
	OK           bool
	Fatal        bool // Chorus cannot run without it
}

// InitLimit is one of task-rules.md's configurable limits.
type InitLimit struct {
	Name, Description string
	Value             int // 0: no limit
}

// InitSetup is the init wizard's data: what the caller detected going in,
// the person's choices coming out. The wizard never looks at the disk.
type InitSetup struct {
	Root      string
	Checks    []InitCheck
	Evidence  string // the file that decided the project type; "" when none did
	Type      string
	Name      string
	Prefix    string
	MaxAgents int
	Quality   []config.QualityCommand
	Limits    []InitLimit
}

// InitOptions configure RunInit.
type InitOptions struct {
	Setup InitSetup
	// Check says what is wrong with a setup, checked as each step is
	// confirmed (the caller validates it as the config it becomes).
	Check func(InitSetup) error
	// Screen replaces the terminal (tests use a tcell simulation screen).
	Screen tcell.Screen
}

// ErrInitCancelled is returned when the person quits the wizard.
var ErrInitCancelled = errors.New("init cancelled; nothing was written")

// Wizard steps.
const (
	stepPrereqs = iota
	stepProject
	stepQuality
	stepRules
	stepConfirm
)

// wizard is the init conversation, without its widgets: each line typed
// at the `>` prompt goes to handle.
type wizard struct {
	s     InitSetup
	step  int
	check func(InitSetup) error
}

// title is the header's right side.
func (w *wizard) title() string {
	if w.step == stepConfirm {
		return "Confirm"
	}
	return fmt.Sprintf("Step %d/4", w.step+1)
}

// hint is the prompt's placeholder for the step.
func (w *wizard) hint() string {
	switch w.step {
	case stepPrereqs:
		return "type to ask questions or press Enter to continue"
	case stepProject:
		return `"name NAME", "prefix PREFIX", "agents N", or Enter to confirm`
	case stepQuality:
		return `"add NAME COMMAND", "edit N COMMAND", "remove N", "toggle N", or Enter when done`
	case stepRules:
		return `"SETTING VALUE" (e.g. "max_acceptance_criteria 8"), or Enter when done`
	}
	return `Enter (or "yes") writes the files; "back" or Esc goes back; or ask a question`
}

// body is the step's text. Detected names and commands come from the
// user's files: cleaned of control characters.
func (w *wizard) body() string {
	var b strings.Builder
	c := present.Clean
	switch w.step {
	case stepPrereqs:
		b.WriteString("Checking prerequisites…\n\n")
		fmt.Fprintf(&b, "  ✓ git repository at %s\n", c(w.s.Root))
		fatal := false
		for _, ch := range w.s.Checks {
			mark := "✓"
			switch {
			case ch.Fatal:
				mark, fatal = "✗", true
			case !ch.OK:
				mark = "!" // optional and missing: Chorus works without it
			}
			fmt.Fprintf(&b, "  %s %s: %s\n", mark, c(ch.Name), c(ch.Detail))
		}
		if fatal {
			b.WriteString("\nA prerequisite is missing (✗): fix it, then run `chorus init` again. Ctrl-C quits.\n")
		} else {
			b.WriteString("\nAll prerequisites met! (! marks what is optional)\n")
		}
	case stepProject:
		b.WriteString("Project Detection:\n")
		if w.s.Evidence != "" {
			fmt.Fprintf(&b, "  └── %s found → %s\n\n", c(w.s.Evidence), c(w.s.Type))
		} else {
			b.WriteString("  └── no go.mod, package.json, pyproject.toml or Cargo.toml: type unknown\n\n")
		}
		fmt.Fprintf(&b, "  Project name:         [%s]\n", c(w.s.Name))
		fmt.Fprintf(&b, "  Task ID prefix:       [%s-]\n", c(w.s.Prefix))
		fmt.Fprintf(&b, "  Agents at once (max): [%d]\n\n", w.s.MaxAgents)
		b.WriteString("Is this correct? Type to change, or Enter to confirm.\n")
	case stepQuality:
		b.WriteString("Quality Commands\nThese run before any task is marked complete.\n\n")
		if len(w.s.Quality) == 0 {
			b.WriteString("  (none detected: add the commands that prove work is done)\n")
		}
		for i, q := range w.s.Quality {
			req := "[ ]"
			if q.Required {
				req = "[*]"
			}
			fmt.Fprintf(&b, "  %d. %s %-12s %s\n", i+1, req, c(q.Name), c(q.Command))
		}
		b.WriteString("\n  [*] = required  [ ] = optional\n\n")
		b.WriteString("Commands:\n  • add <name> <command>   to add\n  • edit <number> <command>\n  • remove <number>        to delete\n  • toggle <number>        for required/optional\n  • Enter or done          when finished\n")
	case stepRules:
		b.WriteString("Task Validation Rules\n\n═══ Built-in Rules (Always Enforced) ═══\n")
		b.WriteString("  • Tasks must be atomic (single responsibility)\n  • All acceptance criteria must be testable\n  • No circular dependencies allowed\n  • Each task must fit within one agent context window\n\n")
		b.WriteString("═══ Configurable Limits (0: no limit) ═══\n")
		for _, l := range w.s.Limits {
			fmt.Fprintf(&b, "  %-26s [%d]  %s\n", c(l.Name), l.Value, c(l.Description))
		}
		b.WriteString("\nType a setting and its value to change it, or Enter to finish.\nOptional rules (naming, forbidden words) are in .chorus/task-rules.md.\n")
	case stepConfirm:
		b.WriteString("Ready to set up Chorus:\n\n")
		fmt.Fprintf(&b, "  project   %s (%s), task ids %s-…, up to %d agents at once\n", c(w.s.Name), c(w.s.Type), c(w.s.Prefix), w.s.MaxAgents)
		if len(w.s.Quality) == 0 {
			b.WriteString("  quality   none (finished work is merged unchecked)\n")
		}
		for i, q := range w.s.Quality {
			req := "optional"
			if q.Required {
				req = "required"
			}
			fmt.Fprintf(&b, "  quality   %d. %s: %s (%s)\n", i+1, c(q.Name), c(q.Command), req)
		}
		for _, l := range w.s.Limits {
			fmt.Fprintf(&b, "  limit     %s = %d\n", c(l.Name), l.Value)
		}
		b.WriteString("\nThis writes .chorus/ (config.json, task-rules.md, prompts), .agent/ and .gitignore entries.\n")
	}
	return b.String()
}

// back goes one step back.
func (w *wizard) back() {
	if w.step > stepPrereqs {
		w.step--
	}
}

// handle applies one typed line. It returns done once the person
// confirmed the last step, and a message for the line under the body.
func (w *wizard) handle(line string) (done bool, msg string, err error) {
	line = strings.TrimSpace(line)
	verb, rest, _ := strings.Cut(line, " ")
	verb, rest = strings.ToLower(verb), strings.TrimSpace(rest)
	next := line == "" || verb == "done" || verb == "yes" || verb == "y"
	if verb == "back" && rest == "" {
		w.back()
		return false, "", nil
	}
	if isQuestion(line) {
		return false, w.answer(line), nil
	}
	switch w.step {
	case stepPrereqs:
		for _, ch := range w.s.Checks {
			if ch.Fatal {
				return false, "", fmt.Errorf("%s: %s; fix it and run `chorus init` again (Ctrl-C quits)", ch.Name, ch.Detail)
			}
		}
		if !next {
			return false, "", errors.New("nothing to change here; Enter continues")
		}
	case stepProject:
		if next {
			break
		}
		s := w.s
		switch verb {
		case "name":
			if rest == "" {
				return false, "", errors.New("name needs a value, e.g. \"name my-app\"")
			}
			s.Name = rest
		case "prefix":
			s.Prefix = strings.TrimSuffix(strings.ToLower(rest), "-")
		case "agents":
			n, err := strconv.Atoi(rest)
			if err != nil {
				return false, "", fmt.Errorf("agents: %q is not a number; e.g. \"agents 3\"", rest)
			}
			s.MaxAgents = n
		default:
			return false, "", fmt.Errorf("%q: type \"name NAME\", \"prefix PREFIX\" or \"agents N\", or Enter to confirm", line)
		}
		if err := w.valid(s); err != nil {
			return false, "", err
		}
		w.s = s
		return false, "changed", nil
	case stepQuality:
		if next {
			break
		}
		return false, "", w.editQuality(verb, rest, line)
	case stepRules:
		if next {
			break
		}
		n, err := strconv.Atoi(rest)
		for i, l := range w.s.Limits {
			if l.Name != verb {
				continue
			}
			if err != nil || n < 0 {
				return false, "", fmt.Errorf("%s: %q is not valid; allowed: a whole number, 0 for no limit", l.Name, rest)
			}
			w.s.Limits[i].Value = n
			return false, "changed", nil
		}
		var names []string
		for _, l := range w.s.Limits {
			names = append(names, l.Name)
		}
		return false, "", fmt.Errorf("%q: type a setting and a value (settings: %s), or Enter when done", line, strings.Join(names, ", "))
	case stepConfirm:
		if !next {
			return false, "", errors.New(`press Enter (or type "yes") to write the files; "back" or Esc goes back; Ctrl-C quits without writing`)
		}
		if err := w.valid(w.s); err != nil {
			return false, "", err
		}
		return true, "", nil
	}
	if err := w.valid(w.s); err != nil {
		return false, "", err
	}
	w.step++
	return false, "", nil
}

// editQuality is one command of the quality step.
func (w *wizard) editQuality(verb, rest, line string) error {
	qs := append([]config.QualityCommand(nil), w.s.Quality...)
	index := func(arg string) (int, string, error) {
		num, tail, _ := strings.Cut(arg, " ")
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || n > len(qs) {
			return 0, "", fmt.Errorf("%s: %q is not a command number; allowed: 1 to %d", verb, num, len(qs))
		}
		return n - 1, strings.TrimSpace(tail), nil
	}
	switch verb {
	case "add":
		name, cmd, _ := strings.Cut(rest, " ")
		if cmd = strings.TrimSpace(cmd); name == "" || cmd == "" {
			return errors.New(`add needs a name and a command, e.g. "add lint npm run lint"`)
		}
		qs = append(qs, config.QualityCommand{Name: name, Command: cmd, Required: true})
	case "edit":
		i, cmd, err := index(rest)
		if err != nil {
			return err
		}
		if cmd == "" {
			return errors.New(`edit needs the new command, e.g. "edit 1 go test -race ./..."`)
		}
		qs[i].Command = cmd
	case "remove", "rm", "delete":
		i, _, err := index(rest)
		if err != nil {
			return err
		}
		qs = append(qs[:i], qs[i+1:]...)
	case "toggle":
		i, _, err := index(rest)
		if err != nil {
			return err
		}
		qs[i].Required = !qs[i].Required
	default:
		return fmt.Errorf("%q: type add, edit, remove or toggle, or Enter when done", line)
	}
	for i := range qs {
		qs[i].Order = i + 1
	}
	s := w.s
	s.Quality = qs
	if err := w.valid(s); err != nil {
		return err
	}
	w.s = s
	return nil
}

func (w *wizard) valid(s InitSetup) error {
	if w.check == nil {
		return nil
	}
	return w.check(s)
}

// RunInit runs the init wizard full screen and returns the setup the
// person confirmed, or ErrInitCancelled.
func RunInit(ctx context.Context, o InitOptions) (InitSetup, error) {
	w := &wizard{s: o.Setup, check: o.Check}
	w.s.Quality = append([]config.QualityCommand(nil), o.Setup.Quality...)
	w.s.Limits = append([]InitLimit(nil), o.Setup.Limits...)
	app := tview.NewApplication()
	header := &barView{Box: tview.NewBox(), left: " CHORUS INIT"}
	body := tview.NewTextView().SetDynamicColors(false).SetRegions(false).SetWrap(true)
	body.SetBorder(true)
	msg := tview.NewTextView().SetDynamicColors(false).SetWrap(true) // three rows: a config error names the field and what is allowed; an answer
	input := tview.NewInputField().SetLabel("> ")
	input.SetFieldBackgroundColor(tcell.ColorDefault)
	noColor := os.Getenv("NO_COLOR") != ""
	refresh := func() {
		header.right = w.title() + " "
		body.SetText(w.body()).ScrollToBeginning()
		input.SetPlaceholder(w.hint())
	}
	say := func(text string, bad bool) {
		st := tcell.StyleDefault
		if bad && !noColor {
			st = st.Foreground(tcell.ColorRed)
		} else if bad {
			st = st.Bold(true)
		}
		msg.SetTextStyle(st)
		msg.SetText(" " + present.Clean(text))
	}
	say("Type a question (ending in ?) at any step; Esc goes back a step; Ctrl-C quits without writing anything", false)
	var result InitSetup
	done := false
	input.SetDoneFunc(func(key tcell.Key) {
		switch key {
		case tcell.KeyEnter:
			line := input.GetText()
			input.SetText("")
			finished, m, err := w.handle(line)
			if err != nil {
				say(err.Error(), true)
				return
			}
			say(m, false)
			if finished {
				result, done = w.s, true
				app.Stop()
				return
			}
			refresh()
		case tcell.KeyEsc:
			input.SetText("")
			w.back()
			say("", false)
			refresh()
		}
	})
	app.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyCtrlC {
			app.Stop()
			return nil
		}
		return ev
	})
	layout := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(header, 1, 0, false).
		AddItem(body, 0, 1, false).
		AddItem(msg, 3, 0, false).
		AddItem(input, 1, 0, true)
	app.SetRoot(layout, true).SetFocus(input)
	if o.Screen != nil {
		app.SetScreen(o.Screen)
	}
	refresh()
	stop := context.AfterFunc(ctx, app.Stop)
	defer stop()
	if err := app.Run(); err != nil {
		return InitSetup{}, fmt.Errorf("opening the terminal: %w", err)
	}
	if !done {
		return InitSetup{}, ErrInitCancelled
	}
	return result, nil
}

// barView is a one-row bar in reverse video: text at the left and at the
// right.
type barView struct {
	*tview.Box
	left, right string
}

func (v *barView) Draw(s tcell.Screen) {
	v.Box.DrawForSubclass(s, v)
	x, y, w, h := v.GetInnerRect()
	if h <= 0 {
		return
	}
	st := tcell.StyleDefault.Reverse(true)
	fill(s, x, y, w, st)
	col := x
	for _, r := range v.left {
		if col < x+w {
			s.SetContent(col, y, r, nil, st)
		}
		col++
	}
	rs := []rune(v.right)
	for i, r := range rs {
		if c := x + w - len(rs) + i; c >= col && c < x+w {
			s.SetContent(c, y, r, nil, st)
		}
	}
}
