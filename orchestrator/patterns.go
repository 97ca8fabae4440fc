package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/patterns"
)

// suggestPatterns runs off the loop after a landing: the learnings file of
// the landed commit, read against PATTERNS.md and the dismissed ids, may
// hold a learning that several tasks found. Each new one becomes an alert
// naming the command that accepts it, once per session.
func (e *Engine) suggestPatterns(commit string) {
	if commit == "" {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		text, err := e.learningsAt(context.Background(), commit)
		if err != nil {
			return // no learnings file on the target yet
		}
		pm, _ := os.ReadFile(e.opt.Dir.Patterns())
		found := patterns.Suggest(text, string(pm), patterns.ReadDismissed(filepath.Join(e.opt.Dir.Path, patterns.DismissedFile)))
		if len(found) == 0 {
			return
		}
		select {
		case e.msgs <- func() {
			for _, s := range found {
				if e.suggested[s.ID] {
					continue
				}
				e.suggested[s.ID] = true
				e.emit(Event{Kind: EvAlert, Text: SuggestionText(s), Fields: map[string]any{"pattern": s.ID}})
			}
		}:
		case <-e.loopDone:
		}
	}()
}

// learningsAt is the learnings file of commit, read through the object
// store the engine shares with the merge service when there is one: a
// `git show` per landing was a git process start for each task.
func (e *Engine) learningsAt(ctx context.Context, commit string) (string, error) {
	if o := e.wt.Objects; o != nil {
		b, err := o.FileAt(ctx, commit, learningsPath)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return strings.TrimRight(string(b), "\n"), err
		}
	}
	return gitx.Git(ctx, e.opt.Dir.Root, "show", commit+":"+learningsPath)
}

// SuggestionText is how a suggestion is put to a person, with the
// commands that settle it.
func SuggestionText(s patterns.Suggestion) string {
	return fmt.Sprintf("pattern found by %s: %q; add it to PATTERNS.md with `chorus patterns accept %s` (or `chorus patterns dismiss %s`)",
		strings.Join(s.Tasks, ", "), s.Text, s.ID, s.ID)
}
