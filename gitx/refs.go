package gitx

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Refs read in-process from the files git keeps: on hot paths (every
// iteration, every landing) a git process per read costs more than the
// read. Anything unusual (a symbolic ref, a reftable repository, an
// unreadable file) reports "not known", and callers ask git.

// IsHash reports a full SHA-1 or SHA-256 object name in lower-case hex.
func IsHash(h string) bool {
	if len(h) != 40 && len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ReadRef reads a shared ref (refs/heads/…, refs/chorus/…) of the
// repository whose common git dir is commonDir: its hash and whether it
// exists. Loose before packed is safe against a concurrent pack-refs,
// which writes packed-refs before it removes the loose file.
func ReadRef(commonDir, name string) (hash string, exists, known bool) {
	b, err := os.ReadFile(filepath.Join(commonDir, filepath.FromSlash(name)))
	if err == nil {
		if h := strings.TrimSpace(string(b)); IsHash(h) {
			return h, true, true
		}
		return "", false, false
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", false, false
	}
	pb, err := os.ReadFile(filepath.Join(commonDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, filesRefStorage(commonDir)
	}
	if err != nil {
		return "", false, false
	}
	if h, ok := PackedRef(pb, name); ok {
		return h, true, true
	}
	return "", false, filesRefStorage(commonDir)
}

// NoRefsUnder reports, from the files git keeps, that the repository
// around dir holds no ref under prefix ("refs/…/", a shared namespace): no
// loose file there, no such line in packed-refs, and refs kept in files.
// Listing a namespace that is nearly always empty (kept work) then costs
// no git process. false means "ask git".
func NoRefsUnder(dir, prefix string) bool {
	if !strings.HasPrefix(prefix, "refs/") || !strings.HasSuffix(prefix, "/") {
		return false
	}
	common, ok := fastCommonDir(dir)
	if !ok || common == "" {
		return false
	}
	if _, err := os.Lstat(filepath.Join(common, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	pb, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	if bytes.Contains(pb, []byte(" "+prefix)) {
		return false
	}
	return filesRefStorage(common)
}

// filesRefStorage reports whether refs of commonDir live in loose files and
// packed-refs, so that finding neither means the ref is missing. A reftable
// repository (git 2.45+, extensions.refStorage=reftable) keeps them in
// reftable/, where "no file" says nothing: anything but the files backend,
// or a config that cannot be read, is left to git. Checked only when a ref
// looks missing, so found refs cost no extra read.
func filesRefStorage(commonDir string) bool {
	if _, err := os.Stat(filepath.Join(commonDir, "reftable")); err == nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(commonDir, "config"))
	if err != nil {
		return false
	}
	storage, ok := configValue(b, "extensions", "refstorage")
	return !ok || strings.EqualFold(storage, "files")
}

// configValue finds key in [section] of a git config file's text (names
// compared as git does, case-insensitively; the last value wins). It reads
// the simple "key = value" lines git writes itself; quoting and includes
// are not followed, which for the keys asked here only matters in files no
// git command writes.
func configValue(b []byte, section, key string) (string, bool) {
	var val string
	var found, in bool
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "["), "]")
			in = strings.EqualFold(strings.TrimSpace(name), section)
			continue
		}
		if !in || line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		if strings.EqualFold(strings.TrimSpace(k), key) {
			val, found = strings.Trim(strings.TrimSpace(v), `"`), true
		}
	}
	return val, found
}

// PackedRef looks name up in the contents of a packed-refs file.
func PackedRef(packed []byte, name string) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(packed))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		h, n, ok := strings.Cut(sc.Text(), " ")
		if ok && n == name && IsHash(h) {
			return h, true
		}
	}
	return "", false
}

// WorktreeHead reads the commit checked out in a linked worktree (one
// whose .git is a "gitdir:" file) or a main checkout; "" when the files
// say something unusual (ask git then).
func WorktreeHead(dir string) string {
	gd, common, ok := worktreeGitDirs(dir)
	if !ok {
		return ""
	}
	return headIn(gd, common)
}

// worktreeGitDirs finds the git dir and the common dir of the checkout
// dir from its .git entry, as git does without environment overrides.
func worktreeGitDirs(dir string) (gd, common string, ok bool) {
	dotgit := filepath.Join(dir, ".git")
	gd, common = dotgit, dotgit
	if st, err := os.Stat(dotgit); err != nil {
		return "", "", false
	} else if !st.IsDir() {
		b, err := os.ReadFile(dotgit)
		if err != nil {
			return "", "", false
		}
		p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return "", "", false
		}
		gd = strings.TrimSpace(p)
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(dir, gd)
		}
		cb, err := os.ReadFile(filepath.Join(gd, "commondir"))
		if err != nil {
			return "", "", false
		}
		common = strings.TrimSpace(string(cb))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gd, common)
		}
	}
	return gd, common, true
}

// headIn reads HEAD of git dir gd: a commit id, or "" (ask git).
func headIn(gd, common string) string {
	hb, err := os.ReadFile(filepath.Join(gd, "HEAD"))
	if err != nil {
		return ""
	}
	head := strings.TrimSpace(string(hb))
	if IsHash(head) {
		return head
	}
	ref, ok := strings.CutPrefix(head, "ref:")
	if !ok {
		return ""
	}
	ref = strings.TrimSpace(ref)
	if !strings.HasPrefix(ref, "refs/heads/") {
		return ""
	}
	if h, exists, known := ReadRef(common, ref); known && exists {
		return h
	}
	return ""
}

// WorktreeAdminDir is the administrative directory of the linked worktree
// dir ($GIT_COMMON_DIR/worktrees/<id>), when its .git file (a regular file
// of this user's) and that directory point at each other; ok is false for
// anything else (the main checkout, a moved or half-made worktree).
func WorktreeAdminDir(dir string) (admin string, ok bool) {
	dotgit := filepath.Join(dir, ".git")
	if st, err := os.Lstat(dotgit); err != nil || !st.Mode().IsRegular() || !ownedByMe(st) {
		return "", false
	}
	gd, _, ok := worktreeGitDirs(dir)
	if !ok || filepath.Base(filepath.Dir(gd)) != "worktrees" {
		return "", false
	}
	back, err := os.ReadFile(filepath.Join(gd, "gitdir"))
	if err != nil || !sameFile(strings.TrimSpace(string(back)), dotgit) {
		return "", false
	}
	return gd, true
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
