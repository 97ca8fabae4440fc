package gitx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrRefExists means a ref to create, or one whose name it would clash
// with (a/b against a), exists already.
var ErrRefExists = errors.New("ref exists")

// CreateRef creates the ref name at hash the way `git update-ref` with a
// zero old value does in a files repository — under name.lock, refused
// when it or a clashing name exists (loose or packed), with a reflog line
// unless core.logAllRefUpdates is off — for a new worktree's branch. The
// returned undo deletes it again (nothing else can have moved it while the
// caller holds the worktree registry). ErrUnsupported: ask git (reftable,
// a hook that watches ref updates, a name outside the plain spelling).
func (o *ObjectStore) CreateRef(ctx context.Context, name, hash, msg string) (undo func(), err error) {
	set, err := o.settings(ctx)
	if err != nil {
		return nil, err
	}
	if set.sha256 || set.unlikeCheckout != "" || len(hash) != 40 || !IsHash(hash) || !plainRefName(name) {
		return nil, fmt.Errorf("creating %s: %w", name, ErrUnsupported)
	}
	common, err := CommonDir(ctx, o.repo)
	if err != nil {
		return nil, err
	}
	if common == "" || !filesRefStorage(common) || exists(filepath.Join(common, "hooks", "reference-transaction")) {
		return nil, fmt.Errorf("creating %s: %w", name, ErrUnsupported)
	}
	var line string
	if !set.noRefLog {
		_, committer, err := o.Ident(ctx)
		if err != nil {
			return nil, err
		}
		who, err := identLine(committer, time.Now())
		if err != nil {
			return nil, fmt.Errorf("%v: %w", err, ErrUnsupported)
		}
		line = strings.Repeat("0", 40) + " " + hash + " " + who + "\t" + OneLine(msg) + "\n"
	}
	pb, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, l := range strings.Split(string(pb), "\n") {
		if h, n, ok := strings.Cut(l, " "); ok && IsHash(h) && clash(n, name) {
			return nil, fmt.Errorf("%s: %w", n, ErrRefExists)
		}
	}
	path := filepath.Join(common, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return nil, fmt.Errorf("creating %s: %v: %w", name, err, ErrRefExists)
	}
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	_, err = f.WriteString(hash + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if _, serr := os.Lstat(path); !errors.Is(serr, fs.ErrNotExist) {
			err = fmt.Errorf("%s: %w", name, ErrRefExists)
		}
	}
	logPath := filepath.Join(common, "logs", filepath.FromSlash(name))
	if err == nil && line != "" {
		err = appendLine(logPath, line)
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		_ = os.Remove(lock)
		return nil, err
	}
	return func() {
		_ = os.Remove(path)
		if line != "" {
			_ = os.Remove(logPath)
		}
	}, nil
}

func appendLine(path, line string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// clash reports refs that cannot both exist: the same name, or one a
// directory of the other.
func clash(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// plainRefName is a ref name git accepts spelled only with letters,
// digits and "-_./", in components that neither start with a dot nor end
// with ".lock"; anything else is left to git's own check.
func plainRefName(n string) bool {
	if !strings.HasPrefix(n, "refs/") || strings.Contains(n, "..") || strings.HasSuffix(n, "/") {
		return false
	}
	for _, c := range strings.Split(n, "/") {
		if c == "" || c[0] == '.' || strings.HasSuffix(c, ".lock") || strings.HasSuffix(c, ".") {
			return false
		}
		for i := 0; i < len(c); i++ {
			b := c[i]
			if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.') {
				return false
			}
		}
	}
	return true
}
