package worktree

// Spare checkouts: a landed task's clean worktree is kept (unregistered,
// under .worktrees/.spare-*) for the next new task's worktree, which then
// rewrites only the files that differ (gitx.Checkout.WriteOver) instead
// of a whole tree's deletions and creations — on a filesystem that has
// just freed a tree's inodes, allocating new ones was most of a
// worktree's cost. Only surely clean worktrees (every file as its index
// records it, nothing else but the scratchpad) become spares: their files
// are committed and landed, so dropping one loses nothing.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// maxSpares bounds the kept checkouts (and their disk).
const maxSpares = 8

const sparePrefix = ".spare-"

type spare struct {
	dir, head string
	index     []byte
}

// stash keeps the surely clean worktree dir, whose administrative
// directory is admin, as a spare (or deletes it); false: nothing was
// done, the caller deletes it.
func (m *Manager) stash(dir, admin string) bool {
	m.spareMu.Lock()
	full := len(m.spares) >= maxSpares || m.sparesOff
	m.spareMu.Unlock()
	if full {
		return false
	}
	head := gitx.WorktreeHead(dir)
	index, err := os.ReadFile(filepath.Join(admin, "index"))
	if len(head) != 40 || err != nil || !gitx.Reusable(index) {
		return false
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	to := filepath.Join(m.RepoDir, Dir, sparePrefix+hex.EncodeToString(b[:]))
	// Moved first: a process stopped from here on leaves a spare the next
	// session deletes, never a worktree half taken apart.
	if err := os.Rename(dir, to); err != nil {
		return false
	}
	gone := []string{filepath.Join(to, ".git")}
	if !gitx.IndexLists(index, ScratchpadPath) {
		gone = append(gone, filepath.Join(to, filepath.FromSlash(ScratchpadPath))) // not work
	}
	for _, p := range gone {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			_ = os.RemoveAll(to)
			return true
		}
	}
	_ = os.Remove(filepath.Join(to, filepath.Dir(filepath.FromSlash(ScratchpadPath)))) // when it is left empty
	m.spareMu.Lock()
	defer m.spareMu.Unlock()
	if m.sparesOff {
		_ = os.RemoveAll(to)
		return true
	}
	m.spares = append(m.spares, spare{dir: to, head: head, index: index})
	return true
}

// takeSpare hands out a spare with its checkout read, or nil.
func (m *Manager) takeSpare(ctx context.Context, objs *gitx.ObjectStore) (*spare, *gitx.Checkout) {
	for {
		m.spareMu.Lock()
		if len(m.spares) == 0 {
			m.spareMu.Unlock()
			return nil, nil
		}
		sp := m.spares[len(m.spares)-1]
		m.spares = m.spares[:len(m.spares)-1]
		m.spareMu.Unlock()
		if co, err := objs.PlanCheckout(ctx, sp.head); err == nil {
			return &sp, co
		}
		_ = os.RemoveAll(sp.dir)
	}
}

// dropSpares forgets the spares and takes no more (Close). They stay on
// disk: deleting them would lengthen the session's end; the next
// session's first worktree has them deleted (sweepSpares).
func (m *Manager) dropSpares() {
	m.spareMu.Lock()
	m.spares, m.sparesOff = nil, true
	m.spareMu.Unlock()
	m.sweeping.Wait()
}

// sweepSpares deletes, on a goroutine of its own, the spares an earlier
// session left behind: off the path of the worktree that found them.
func (m *Manager) sweepSpares() {
	ents, err := os.ReadDir(filepath.Join(m.RepoDir, Dir))
	if err != nil {
		return
	}
	var old []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), sparePrefix) {
			old = append(old, filepath.Join(m.RepoDir, Dir, e.Name()))
		}
	}
	if len(old) == 0 {
		return
	}
	m.sweeping.Add(1)
	go func() {
		defer m.sweeping.Done()
		for _, d := range old {
			_ = os.RemoveAll(d)
		}
	}()
}
