package worktree

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/taskid"
)

// Dir is the folder, relative to the repository root, that holds every
// agent worktree.
const Dir = ".worktrees"

// BranchPrefix starts every agent branch: agent/{agent}/{task}.
const BranchPrefix = "agent/"

// maxSlug bounds one name part so that paths and refs stay well under
// filesystem and ref length limits.
const maxSlug = 48

// ErrEmptyName is returned by Name for an empty agent name or task id.
var ErrEmptyName = errors.New("worktree: empty agent name or task id")

// Name returns the worktree directory (relative to the repository root,
// always directly inside .worktrees/) and the branch for an agent working on
// a task. Agent names and task ids come from config and the task store, so
// they are untrusted: anything that could make the path escape .worktrees/
// or the ref invalid is mapped to a safe slug (see Slug).
func Name(agent, task string) (dir, branch string, err error) {
	if agent == "" || task == "" {
		return "", "", ErrEmptyName
	}
	a, t := Slug(agent), Slug(task)
	return filepath.Join(Dir, a+"-"+t), BranchPrefix + a + "/" + t, nil
}

// ParseBranch splits an agent branch into its agent and task slugs.
func ParseBranch(branch string) (agent, task string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimPrefix(branch, "refs/heads/"), BranchPrefix)
	if !found {
		return "", "", false
	}
	agent, task, ok = strings.Cut(rest, "/")
	if !ok || agent == "" || task == "" || strings.Contains(task, "/") {
		return "", "", false
	}
	return agent, task, true
}

// Slug maps s to a string that is safe both as one path element and as one
// ref component. A string that is already safe is returned unchanged, so
// ordinary ids like "ch-12" or "bd-a3f8.1" keep their readable names.
// Anything else is cleaned and given a short hash of the original, so two
// different unsafe inputs do not collide after cleaning ("a/b" and "a b"
// both clean to "a-b" but get different hashes).
func Slug(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	lastSep := true // suppresses leading separators
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
			lastSep = false
		case r == '.' || r == '-':
			if !lastSep {
				b.WriteRune(r)
				lastSep = true
			}
		default:
			if !lastSep {
				b.WriteByte('-')
				lastSep = true
			}
		}
	}
	out := b.String()
	if len(out) > maxSlug {
		out = out[:maxSlug]
	}
	for {
		trimmed := strings.TrimRight(out, ".-")
		trimmed = strings.TrimSuffix(trimmed, ".lock")
		if trimmed == out {
			break
		}
		out = trimmed
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:4])
	if out == "" {
		return "id-" + h
	}
	return out + "-" + h
}

// safe reports whether s can be used verbatim: a valid task id (the one id
// rule, taskid.Check) that is short enough for a slug.
func safe(s string) bool {
	return len(s) <= maxSlug && taskid.Check(s) == nil
}

// checkRel verifies that dir, as produced by Name, is a direct child of Dir.
// Name guarantees it; this guards the places that delete things.
func checkRel(dir string) error {
	if !filepath.IsLocal(dir) || filepath.Dir(dir) != Dir || filepath.Base(dir) == Dir {
		return fmt.Errorf("worktree: %q is not inside %s/", dir, Dir)
	}
	return nil
}
