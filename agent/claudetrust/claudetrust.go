// Package claudetrust marks a folder trusted in Claude Code's own config
// file, so the interactive CLI does not open its first-run trust dialog
// there (whose default answer, "No, exit", ends the agent).
package claudetrust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
)

// ConfigFile is the Claude Code config file an agent with environment env
// (KEY=VALUE, over this process's) reads: $CLAUDE_CONFIG_DIR/.claude.json,
// else $HOME/.claude.json. Empty when neither is set.
func ConfigFile(env []string) string {
	get := func(k string) string {
		v := os.Getenv(k)
		for _, kv := range env {
			if kk, vv, ok := strings.Cut(kv, "="); ok && kk == k {
				v = vv
			}
		}
		return v
	}
	if d := get("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, ".claude.json")
	}
	if h := get("HOME"); h != "" {
		return filepath.Join(h, ".claude.json")
	}
	return ""
}

// Trust records dir, exactly (no parent, no child), as trusted in the
// config file: "projects": {dir: {"hasTrustDialogAccepted": true}}. Every
// other key, and every other field of dir's entry, is kept as it was. The
// file is replaced atomically, and writers in this and other Chorus
// processes are serialised by a lock file next to it. A file that is not a
// JSON object is an error and is left alone.
func Trust(file, dir string) error {
	if file == "" {
		return errors.New("no Claude Code config file: neither CLAUDE_CONFIG_DIR nor HOME is set")
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("trusting %q: an absolute path is needed", dir)
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(file+".chorus-lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	perm := os.FileMode(0o600)
	top := map[string]json.RawMessage{}
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if st, err := os.Stat(file); err == nil {
			perm = st.Mode().Perm()
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &top); err != nil {
				return fmt.Errorf("%s is not a JSON object (%v); fix or remove it, or turn trustWorktrees off", file, err)
			}
		}
	}
	projects := map[string]json.RawMessage{}
	if raw, ok := top["projects"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &projects); err != nil {
			return fmt.Errorf("%s: \"projects\" is not an object (%v)", file, err)
		}
	}
	entry := map[string]json.RawMessage{}
	if raw, ok := projects[dir]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &entry); err != nil {
			return fmt.Errorf("%s: projects[%q] is not an object (%v)", file, dir, err)
		}
	}
	if string(entry["hasTrustDialogAccepted"]) == "true" {
		return nil // already trusted: do not rewrite a file the CLI also writes
	}
	entry["hasTrustDialogAccepted"] = json.RawMessage("true")
	if projects[dir], err = json.Marshal(entry); err != nil {
		return err
	}
	if top["projects"], err = json.Marshal(projects); err != nil {
		return err
	}
	out, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return err
	}
	return chorusdir.WriteAtomic(file, append(out, '\n'), perm)
}

// Trusted reports whether dir is marked trusted in the config file.
func Trusted(file, dir string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	var c struct {
		Projects map[string]struct {
			Trusted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	return json.Unmarshal(b, &c) == nil && c.Projects[filepath.Clean(dir)].Trusted
}

// RepoTrusted reports whether the user trusted the repository itself in
// Claude Code (its path as given or with symlinks resolved): Chorus then
// carries that trust to the repository's worktrees for the run.
func RepoTrusted(file, repo string) bool {
	if Trusted(file, repo) {
		return true
	}
	real, err := filepath.EvalSymlinks(repo)
	return err == nil && real != repo && Trusted(file, real)
}

// TrustsWorktrees reports whether an agent profile's worktrees are marked
// trusted before it starts: an interactive Claude Code profile whose
// trustWorktrees is on, or whose repository the user trusted (inherited).
func TrustsWorktrees(p config.AgentProfile, repo string) bool {
	if p.TranscriptKind() != config.TranscriptClaude {
		return false
	}
	return p.TrustWorktrees || RepoTrusted(ConfigFile(p.Env), repo)
}

// Problem says why the interactive Claude Code profile name would stop at
// Claude Code's trust dialog in every new Chorus worktree, and how to fix
// it; "" when it would not (not such a profile, or trusted either way).
func Problem(name string, p config.AgentProfile, repo string) string {
	if p.TranscriptKind() != config.TranscriptClaude || TrustsWorktrees(p, repo) {
		return ""
	}
	return fmt.Sprintf("Claude Code has not trusted %s, so agent %q would stop at its trust dialog in every new worktree. "+
		"Run `claude` once in %s and answer \"Yes, I trust this folder\" (Chorus then trusts its worktrees for the run), "+
		"or set agents.available.%s.trustWorktrees to true in .chorus/config.json", repo, name, repo, name)
}
