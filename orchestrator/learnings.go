package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/gitx"
)

// learningsPath is the shared learnings file, relative to the repository.
const learningsPath = ".agent/learnings.md"

// LearningsText says whether b can be a learnings file: UTF-8 text with no
// NUL bytes (a crash mid-write or a stray binary write leaves neither).
func LearningsText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// checkLearnings runs at session start: a learnings file that is not text
// is put back to its last committed version that is (HEAD's, or an older
// one when the junk was committed), the broken file kept under
// .chorus/recovered/. The warning says what happened; it is returned to
// be shown once the engine runs ("" when the file is fine).
func (e *Engine) checkLearnings(ctx context.Context) string {
	root := e.opt.Dir.Root
	p := filepath.Join(root, learningsPath)
	b, err := os.ReadFile(p)
	if err != nil || LearningsText(b) {
		return ""
	}
	dir := filepath.Join(e.opt.Dir.Path, "recovered")
	kept := filepath.Join(dir, "learnings.md."+time.Now().UTC().Format("20060102T150405.000Z"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Sprintf("%s is corrupted (not text) and could not be kept aside (%v); left as it is: restore it with `git checkout -- %s`", learningsPath, err, learningsPath)
	}
	if err := chorusdir.WriteAtomic(kept, b, 0o600); err != nil {
		return fmt.Sprintf("%s is corrupted (not text) and could not be kept aside (%v); left as it is: restore it with `git checkout -- %s`", learningsPath, err, learningsPath)
	}
	good, from := lastTextLearnings(ctx, root)
	if from == "" {
		good = "# Learnings\n"
		from = "no committed version is text: started anew"
	} else {
		from = "restored from commit " + from
	}
	if err := chorusdir.WriteAtomic(p, []byte(good), 0o644); err != nil {
		return fmt.Sprintf("%s is corrupted (not text); the broken file is kept at %s, but writing the recovered one failed: %v", learningsPath, kept, err)
	}
	return fmt.Sprintf("%s was corrupted (not text: NUL bytes or invalid UTF-8); %s; the broken file is kept at %s", learningsPath, from, kept)
}

// lastTextLearnings is the newest committed learnings file (of HEAD's
// history, at most 50 versions back) that is text, and its commit.
func lastTextLearnings(ctx context.Context, root string) (string, string) {
	revs, err := gitx.Git(ctx, root, "log", "-n", "50", "--format=%H", "HEAD", "--", learningsPath)
	if err != nil {
		return "", ""
	}
	for _, c := range strings.Fields(revs) {
		text, err := gitx.Git(ctx, root, "show", c+":"+learningsPath)
		if err != nil {
			continue // deleted in that commit
		}
		if LearningsText([]byte(text)) {
			return text + "\n", c[:12]
		}
	}
	return "", ""
}
