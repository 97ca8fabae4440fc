package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/report"
)

// initialTarget is the branch `chorus init` records as merge.targetBranch:
// the one checked out (even before its first commit), or, on a detached
// HEAD, the repository's default branch. "" when neither can be told.
func initialTarget(ctx context.Context, root string) (string, error) {
	b, err := gitx.CurrentBranch(ctx, root)
	if err != nil || b != "" {
		return b, err
	}
	return defaultBranch(ctx, root), nil
}

// defaultBranch is the repository's default branch that exists locally:
// the one origin's HEAD names, then init.defaultBranch, then main or master.
func defaultBranch(ctx context.Context, root string) string {
	var names []string
	if r, err := gitx.Git(ctx, root, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"); err == nil {
		if _, b, ok := strings.Cut(r, "/"); ok {
			names = append(names, b)
		}
	}
	if d, err := gitx.Git(ctx, root, "config", "--get", "init.defaultBranch"); err == nil && d != "" {
		names = append(names, d)
	}
	for _, n := range append(names, "main", "master") {
		if _, err := gitx.Git(ctx, root, "rev-parse", "--verify", "--quiet", "refs/heads/"+n); err == nil {
			return n
		}
	}
	return ""
}

// recordTarget returns the branch agents' work lands on. A config without
// merge.targetBranch (one written before init recorded it) gets the branch
// the last session merged into (from the session log), or else the one
// checked out now, written into the config file once and said on w: from
// then on the target stays put whichever branch the user checks out. ""
// means a detached HEAD with nothing configured or logged.
func recordTarget(ctx context.Context, p *project, w io.Writer) (string, error) {
	if t := p.cfg.Merge.TargetBranch; t != "" {
		return t, nil
	}
	// The branch earlier sessions merged into, when the log names one that
	// still exists: the user may have checked out their own branch since.
	b, why := lastSessionTarget(p.dir), "the branch Chorus merged into last time"
	if b != "" && !branchExists(ctx, p.root, b) {
		b = ""
	}
	if b == "" {
		var err error
		if b, err = gitx.CurrentBranch(ctx, p.root); err != nil || b == "" {
			return b, err
		}
		why = "the branch checked out now"
	}
	p.cfg.Merge.TargetBranch = b
	if p.loaded == nil || p.loaded.Path == "" {
		return b, nil
	}
	if err := config.SetKey(p.loaded.Path, "merge.targetBranch", b); err != nil {
		fmt.Fprintf(w, "warning: merge.targetBranch is empty and recording %q in %s failed: %v; this run merges into %s and the next start tries again; set merge.targetBranch yourself to be sure\n", b, p.loaded.Path, err, b)
		return b, nil
	}
	fmt.Fprintf(w, "chorus: merge.targetBranch was empty: recorded %q, %s, in %s; agents' work lands on %s from now on, whichever branch you check out (change merge.targetBranch to move it)\n", b, why, p.loaded.Path, b)
	_ = p.dir.AppendLog("implementation", "target_recorded", map[string]any{"target": b, "config": p.loaded.Path})
	return b, nil
}

// lastSessionTarget is the target the last session recorded in the session
// log ("" when none did).
func lastSessionTarget(d chorusdir.Dir) string {
	f, err := os.Open(d.SessionLog())
	if err != nil {
		return ""
	}
	defer f.Close()
	target := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	needle := []byte(`"event":"` + report.SessionStarted + `"`)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), needle) {
			continue
		}
		var e chorusdir.Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			if t, _ := e.Details["target"].(string); t != "" {
				target = t
			}
		}
	}
	return target
}

// branchExists says refs/heads/b exists.
func branchExists(ctx context.Context, root, b string) bool {
	_, err := gitx.Git(ctx, root, "rev-parse", "--verify", "--quiet", "refs/heads/"+b)
	return err == nil
}
