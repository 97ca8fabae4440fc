package gitx

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
)

// FileAt returns the contents of the file at path (slash-separated,
// relative to the root) in commit, as `git show commit:path` prints it,
// read through the batch process rather than a git of its own. A path
// the commit does not have is an error wrapping fs.ErrNotExist.
func (o *ObjectStore) FileAt(ctx context.Context, commit, path string) ([]byte, error) {
	id, err := o.rootTree(ctx, commit)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(path, "/")
	for i, name := range parts {
		t, err := o.tree(ctx, id)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range t {
			if e.Name != name {
				continue
			}
			if last := i == len(parts)-1; last == e.IsTree() || e.Mode == "160000" {
				break // a folder named as the file, a file on the way, a submodule
			}
			id, found = e.ID, true
			break
		}
		if !found {
			return nil, fmt.Errorf("%s:%s: %w", commit, path, fs.ErrNotExist)
		}
	}
	typ, data, err := o.readObject(ctx, id)
	if err != nil {
		return nil, err
	}
	if typ != "blob" {
		return nil, fmt.Errorf("%s:%s is a %s, not a file", commit, path, typ)
	}
	return data, nil
}
