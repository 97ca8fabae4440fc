// The event log and learnings views.

package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

// showLogs is the session log, newest last, filtered by what is typed.
func (u *UI) showLogs() {
	tv := textBox("SESSION LOG")
	tv.SetWrap(false)
	filter := tview.NewInputField().SetLabel("filter: ")
	flex := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(filter, 1, 0, true).AddItem(tv, 0, 1, false)
	flex.SetBorder(true).SetTitle(" LOGS (type to filter, Esc closes) ")
	var lines []string
	render := func() {
		f := strings.ToLower(filter.GetText())
		var b strings.Builder
		for _, l := range lines {
			if f == "" || strings.Contains(strings.ToLower(l), f) {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		tv.SetText(b.String())
		tv.ScrollToEnd()
	}
	filter.SetChangedFunc(func(string) { render() })
	u.logView = func(l string) {
		lines = append(lines, l)
		render()
	}
	u.openOverlay(ovLogs, flex, 140, 40, func(ev *tcell.EventKey) *tcell.EventKey {
		switch ev.Key() {
		case tcell.KeyEsc:
			u.closeOverlay()
			return nil
		case tcell.KeyUp, tcell.KeyDown, tcell.KeyPgUp, tcell.KeyPgDn, tcell.KeyHome, tcell.KeyEnd:
			tv.InputHandler()(ev, func(tview.Primitive) {})
			return nil
		}
		return ev
	}, nil)
	path := u.o.Dir.SessionLog()
	u.work(func(ctx context.Context) func() {
		got, err := readLogTail(path, 3000)
		return func() {
			u.pumpApply(func() {
				if u.over == nil || u.over.name != ovLogs {
					return
				}
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					got = append(got, "reading the session log: "+err.Error())
				}
				lines = append(got, lines...)
				render()
			})
		}
	})
}

// appendLog adds a live event line to the open log view.
func (u *UI) appendLog(line string) {
	if u.over != nil && u.over.name == ovLogs && u.logView != nil {
		u.logView(line)
	}
}

// readLogTail reads the last n entries of the session log as text.
func readLogTail(path string, n int) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const maxRead = 2 << 20
	if len(b) > maxRead {
		b = b[len(b)-maxRead:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e chorusdir.Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		ev := orchestrator.Event{Time: e.TS, Kind: orchestrator.EventKind(e.Event)}
		ev.Agent, _ = e.Details["agentId"].(string)
		ev.Task, _ = e.Details["taskId"].(string)
		ev.Text, _ = e.Details["text"].(string)
		out = append(out, formatEvent(ev))
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, sc.Err()
}

// showLearnings shows .agent/learnings.md and .chorus/PATTERNS.md.
func (u *UI) showLearnings() {
	tv := textBox("LEARNINGS (Esc closes)")
	tv.SetText("loading…")
	u.openOverlay(ovLearnings, tv, 110, 40, u.closeKeys('q', 'L'), nil)
	paths := []string{u.o.Dir.Learnings(), u.o.Dir.Patterns()}
	u.work(func(ctx context.Context) func() {
		var b strings.Builder
		for _, p := range paths {
			data, err := os.ReadFile(p)
			fmt.Fprintf(&b, "── %s ──\n", p)
			switch {
			case errors.Is(err, os.ErrNotExist):
				b.WriteString("(none yet)\n\n")
			case err != nil:
				fmt.Fprintf(&b, "(cannot read: %v)\n\n", err)
			default:
				b.WriteString(present.Block(string(data)))
				b.WriteString("\n\n")
			}
		}
		text := b.String()
		return func() {
			u.pumpApply(func() {
				if u.over != nil && u.over.name == ovLearnings {
					tv.SetText(text)
				}
			})
		}
	})
}
