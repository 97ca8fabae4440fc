package gitx

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
)

// MergeTrees computes the merged tree of commits ours and theirs, whose
// merge base is base (the single one MergeBase finds), in-process ONLY
// when no path is changed by both sides. Walking the three trees entry by
// entry: an entry changed on one side takes that side's version; a
// directory changed (or added) on both sides is merged recursively; anything else
// changed on both sides (even identically), a file/directory switch, a
// submodule, or a .gitattributes change gives ok=false and the caller runs
// `git merge-tree`. When ok, the tree (written as loose objects) is the
// one `git merge-tree --write-tree ours theirs` gives: with no path
// touched by both sides there is nothing for rename detection, merge
// drivers or attributes to change.
func (o *ObjectStore) MergeTrees(ctx context.Context, base, ours, theirs string) (tree string, ok bool, err error) {
	var roots [3]string
	for i, id := range []string{base, ours, theirs} {
		if roots[i], err = o.rootTree(ctx, id); err != nil {
			return "", false, err
		}
	}
	if _, err := o.objectsDir(ctx); err != nil {
		return "", false, err
	}
	res, ok, err := o.mergeTree(ctx, roots[0], roots[1], roots[2], o.isDurable())
	if err != nil || !ok {
		return "", false, err
	}
	if res == "" {
		// Everything deleted: git's result is the empty tree.
		if res, err = o.writeObject(ctx, "tree", nil, o.isDurable()); err != nil {
			return "", false, err
		}
	}
	return res, true, nil
}

// entryEq compares two optional entries.
func entryEq(a, b *TreeEntry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Mode == b.Mode && a.ID == b.ID
}

func isTreeEntry(e *TreeEntry) bool { return e != nil && e.IsTree() }

// canonicalModes are the modes git writes; merge-ort writes no others.
var canonicalModes = map[string]bool{"100644": true, "100755": true, "120000": true, "40000": true, "160000": true}

// mergeTree merges directory trees b (base), x (ours), y (theirs); ""
// stands for a missing or empty directory.
func (o *ObjectStore) mergeTree(ctx context.Context, b, x, y string, durable bool) (string, bool, error) {
	switch {
	case x == b:
		return y, true, nil
	case y == b:
		return x, true, nil
	case x == y:
		return "", false, nil // the same change on both sides
	}
	var sides [3]map[string]*TreeEntry
	var names []string
	seen := map[string]bool{}
	ts, err := o.treesOf(ctx, b, x, y)
	if err != nil {
		return "", false, err
	}
	for i, t := range ts {
		sides[i] = map[string]*TreeEntry{}
		for k := range t {
			e := &t[k]
			if sides[i][e.Name] != nil {
				return "", false, nil // a malformed tree: git's business
			}
			sides[i][e.Name] = e
			if !seen[e.Name] {
				seen[e.Name] = true
				names = append(names, e.Name)
			}
		}
	}
	var out []TreeEntry
	for _, name := range names {
		eb, ex, ey := sides[0][name], sides[1][name], sides[2][name]
		xSame, ySame := entryEq(ex, eb), entryEq(ey, eb)
		if xSame && ySame {
			out = append(out, *eb)
			continue
		}
		if name == ".gitattributes" {
			return "", false, nil
		}
		var take *TreeEntry
		switch {
		case xSame || ySame:
			changed := ex
			if xSame {
				changed = ey
			}
			for _, e := range []*TreeEntry{eb, changed} {
				if e != nil && e.Mode == gitlinkMode {
					return "", false, nil
				}
			}
			if eb != nil && changed != nil && eb.IsTree() != changed.IsTree() {
				return "", false, nil // a file/directory switch
			}
			take = changed
		case (eb == nil || isTreeEntry(eb)) && isTreeEntry(ex) && isTreeEntry(ey):
			// A directory both sides changed, or both added: merged
			// entry by entry.
			baseID := ""
			if eb != nil {
				baseID = eb.ID
			}
			sub, ok, err := o.mergeTree(ctx, baseID, ex.ID, ey.ID, durable)
			if err != nil || !ok {
				return "", false, err
			}
			if sub != "" {
				take = &TreeEntry{Mode: "40000", Name: name, ID: sub}
			}
		default:
			return "", false, nil // changed on both sides
		}
		if take != nil {
			out = append(out, *take)
		}
	}
	if len(out) == 0 {
		return "", true, nil // git drops a directory left empty
	}
	slices.SortFunc(out, func(p, q TreeEntry) int { return gitNameCmp(p.Name, p.IsTree(), q.Name, q.IsTree()) })
	var buf bytes.Buffer
	for _, e := range out {
		if !canonicalModes[e.Mode] {
			return "", false, nil
		}
		raw, err := hex.DecodeString(e.ID)
		if err != nil || len(raw) != 20 {
			return "", false, fmt.Errorf("tree entry %s has a bad id %q", e.Name, e.ID)
		}
		buf.WriteString(e.Mode)
		buf.WriteByte(' ')
		buf.WriteString(e.Name)
		buf.WriteByte(0)
		buf.Write(raw)
	}
	id, err := o.writeObject(ctx, "tree", buf.Bytes(), durable)
	if err != nil {
		return "", false, err
	}
	o.cacheTree(id, slices.Clip(out))
	return id, true, nil
}
