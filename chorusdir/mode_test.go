package chorusdir

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", path, got, want)
	}
}

// What Chorus creates in .chorus/ is the user's only: the directory 0700,
// its files 0600, whatever the umask lets through.
func TestCreatedPrivate(t *testing.T) {
	d := At(t.TempDir())
	if err := d.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := d.AppendLog("auto", "started", nil); err != nil {
		t.Fatal(err)
	}
	log, closer, err := d.OpenDiagLog()
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello")
	closer.Close()
	l, err := d.Acquire("test")
	if err != nil {
		t.Fatal(err)
	}
	wantMode(t, d.Lock(), FileMode)
	l.Release()
	ledger := filepath.Join(d.Path, "ledgers", "t-1.md")
	if err := WriteAtomic(ledger, []byte("x"), FileMode); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d.Path, d.Logs(), filepath.Dir(ledger)} {
		wantMode(t, p, DirMode)
	}
	for _, p := range []string{d.SessionLog(), d.DiagLog(), ledger} {
		wantMode(t, p, FileMode)
	}
}

// An install made while .chorus/ was world-readable is made private when
// the next Chorus takes the lock; owner bits (a hook's x) stay, and a
// symbolic link's target outside is not touched.
func TestAcquireTightensExistingInstall(t *testing.T) {
	root := t.TempDir()
	d := At(root)
	outside := filepath.Join(root, "outside.txt")
	files := map[string]os.FileMode{
		d.State():                                   0o644,
		d.SessionLog():                              0o666,
		filepath.Join(d.Logs(), "agent-1.log"):      0o644,
		filepath.Join(d.Path, "ledgers", "t-1.md"):  0o640,
		filepath.Join(d.Hooks(), "pre-merge"):       0o755,
		filepath.Join(d.Path, "transcripts", "a.x"): 0o604,
		outside: 0o644,
	}
	for p, m := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), m); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := os.Chmod(d.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(d.Path, "link")); err != nil {
		t.Fatal(err)
	}
	l, err := d.Acquire("test")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	err = filepath.WalkDir(d.Path, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			wantMode(t, p, DirMode)
		case p == filepath.Join(d.Hooks(), "pre-merge"):
			wantMode(t, p, 0o700)
		case e.Type().IsRegular():
			wantMode(t, p, FileMode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantMode(t, outside, 0o644)
}
