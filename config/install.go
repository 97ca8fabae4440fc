package config

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	chorus "github.com/chorus-dev/chorus"
	"github.com/chorus-dev/chorus/chorusdir"
)

// InstallResult says what Install created and what it found already there.
type InstallResult struct {
	Created  []string // paths relative to the repository root
	Existing []string
	// GitignoreAdded lists the entries appended to .gitignore.
	GitignoreAdded []string
}

// GitignoreEntries are the runtime paths that never belong in git: what
// an engine writes while it runs (state, journal, logs, ledgers, reports,
// its socket and keys). The setup — config, prompts, rules, hooks,
// PATTERNS.md — is committed. planning-state.json comes from the template
// but changes at run time.
var GitignoreEntries = []string{".worktrees/", ".chorus/state.json", ".chorus/state.journal", ".chorus/planning-state.json",
	".chorus/session-log.jsonl", ".chorus/merge-history.jsonl", ".chorus/logs/", ".chorus/ledgers/", ".chorus/reports/",
	".chorus/answers/", ".chorus/engine/", ".chorus/hosts/", ".chorus/signal-keys/", ".chorus/chorus.lock", ".chorus/instance.json", ".agent/scratchpad.md"}

// Install creates .chorus/ from the embedded template in root, with cfg as
// config.json, plus .agent/learnings.md, and adds runtime paths to
// .gitignore. Existing files are kept as they are: running it again never
// overwrites the user's edits.
func Install(root string, cfg Config) (InstallResult, error) {
	var res InstallResult
	d := chorusdir.At(root)
	if err := d.Ensure(); err != nil {
		return res, err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	if cfg.CreatedAt == "" {
		cfg.CreatedAt = now
	}
	cfg.UpdatedAt = now
	rel := func(p string) string {
		r, err := filepath.Rel(root, p)
		if err != nil {
			return p
		}
		return r
	}
	if _, err := os.Stat(d.Config()); err == nil {
		res.Existing = append(res.Existing, rel(d.Config()))
	} else if errors.Is(err, fs.ErrNotExist) {
		if err := Save(d.Config(), cfg); err != nil {
			return res, err
		}
		res.Created = append(res.Created, rel(d.Config()))
	} else {
		return res, err
	}
	const top = ".chorus-template"
	err := fs.WalkDir(chorus.Template, top, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		sub := strings.TrimPrefix(p, top+"/")
		var dst string
		dirMode, mode := chorusdir.DirMode, chorusdir.FileMode
		switch {
		case strings.HasPrefix(sub, "agent/scratchpad.md"):
			return nil // goes into each worktree, not the main checkout
		case strings.HasPrefix(sub, "agent/"):
			dst = filepath.Join(root, ".agent", filepath.FromSlash(strings.TrimPrefix(sub, "agent/")))
			dirMode, mode = 0o755, 0o644 // the project's files, shared like any other
		default:
			dst = filepath.Join(d.Path, filepath.FromSlash(sub))
		}
		if _, err := os.Stat(dst); err == nil {
			res.Existing = append(res.Existing, rel(dst))
			return nil
		}
		data, err := chorus.Template.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), dirMode); err != nil {
			return err
		}
		if err := chorusdir.WriteAtomic(dst, data, mode); err != nil {
			return err
		}
		res.Created = append(res.Created, rel(dst))
		return nil
	})
	if err != nil {
		return res, err
	}
	added, err := ensureGitignore(filepath.Join(root, ".gitignore"), GitignoreEntries)
	res.GitignoreAdded = added
	return res, err
}

// ScratchpadTemplate is the text of a new agent scratchpad.
func ScratchpadTemplate() string {
	b, _ := chorus.Template.ReadFile(path.Join(".chorus-template", "agent", "scratchpad.md"))
	return string(b)
}

// PromptTemplate returns the built-in text of a prompt file (e.g.
// "impl-agent.md"), used when the project's copy is missing.
func PromptTemplate(name string) string {
	b, _ := chorus.Template.ReadFile(path.Join(".chorus-template", "prompts", name))
	return string(b)
}

// TaskRulesTemplate is the text of the task-rules.md that Install writes.
func TaskRulesTemplate() string {
	b, _ := chorus.Template.ReadFile(path.Join(".chorus-template", "task-rules.md"))
	return string(b)
}

// ensureGitignore appends the entries .gitignore lacks, once.
func ensureGitignore(path string, entries []string) ([]string, error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		l = strings.TrimSpace(l)
		have[l] = true
		have[strings.TrimPrefix(l, "/")] = true
	}
	var add []string
	for _, e := range entries {
		if !have[e] && !have[strings.TrimSuffix(e, "/")] {
			add = append(add, e)
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.Write(old)
	if len(old) > 0 && !strings.HasSuffix(string(old), "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("# Chorus runtime files\n")
	for _, e := range add {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	return add, chorusdir.WriteAtomic(path, []byte(b.String()), 0o644)
}
