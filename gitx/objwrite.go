package gitx

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chorus-dev/chorus/proc"
)

// Ident is who git records as author or committer. A zero When means the
// time of the write.
type Ident struct {
	Name, Email string
	When        time.Time
}

// NewCommit describes a commit to write, the way `git commit-tree TREE -p
// P… -m M…` takes it.
type NewCommit struct {
	Tree              string
	Parents           []string
	Messages          []string // each like one -m
	Author, Committer Ident
	Durable           bool // fsync the object and its directory
}

// settings are the repository's configuration that decides whether the
// in-process paths give git's answer.
type settings struct {
	sha256     bool   // extensions.objectFormat
	gpgSign    bool   // commit.gpgSign: commit-tree would sign
	encoding   string // i18n.commitEncoding other than UTF-8: an encoding header
	shared     bool   // core.sharedRepository: other file modes
	orderFile  bool   // diff.orderFile reorders `git diff` output
	shallow    bool   // grafted history: walks would see other parents
	objectsEnv bool   // GIT_OBJECT_DIRECTORY points elsewhere
	// unlikeCheckout names a setting under which a checkout written here
	// would differ from git's (line endings, filters, hooks, index
	// formats, sparse checkouts…); "" when none is set.
	unlikeCheckout string
	noRefLog       bool // core.logAllRefUpdates false: no reflog for a new branch
}

// settings reads the configuration once with one `git config` call. A
// failure (say, a cancelled context) is not remembered: the next call asks
// again.
func (o *ObjectStore) settings(ctx context.Context) (settings, error) {
	o.setMu.Lock()
	defer o.setMu.Unlock()
	if o.setLoaded {
		return o.set, nil
	}
	r, err := proc.Run(ctx, proc.Spec{Argv: []string{"git", "config", "-z", "--list"}, Dir: o.repo, Timeout: timeout,
		Env: []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}})
	if err != nil {
		return settings{}, fmt.Errorf("git config --list: %w", err)
	}
	if r.ExitCode != 0 {
		return settings{}, fmt.Errorf("git config --list: %s", strings.TrimSpace(string(r.Stderr)))
	}
	set := parseSettings(string(r.Stdout))
	set.objectsEnv = os.Getenv("GIT_OBJECT_DIRECTORY") != ""
	common, err := CommonDir(ctx, o.repo)
	if err != nil {
		return settings{}, err
	}
	set.shallow = common == "" || exists(filepath.Join(common, "shallow")) || exists(filepath.Join(common, "info", "grafts"))
	o.set, o.setLoaded = set, true
	return set, nil
}

func parseSettings(list string) settings {
	var s settings
	for _, kv := range strings.Split(list, "\x00") {
		k, v, hasValue := strings.Cut(kv, "\n")
		switch strings.ToLower(k) {
		case "extensions.objectformat":
			s.sha256 = !strings.EqualFold(v, "sha1")
		case "commit.gpgsign":
			s.gpgSign = gitBool(v, hasValue)
		case "i18n.commitencoding":
			s.encoding = v
			if e := strings.ToLower(v); e == "utf-8" || e == "utf8" {
				s.encoding = ""
			}
		case "core.sharedrepository":
			switch strings.ToLower(v) {
			case "umask", "false", "no", "off", "0":
				s.shared = false
			default:
				s.shared = true
			}
		case "diff.orderfile":
			s.orderFile = v != ""
		case "core.logallrefupdates":
			s.noRefLog = !gitBool(v, hasValue) && !strings.EqualFold(v, "always")
		default:
			if s.unlikeCheckout == "" && unlikeCheckout(strings.ToLower(k), v, hasValue) {
				s.unlikeCheckout = k
			}
		}
	}
	return s
}

// gitBool reads a boolean the way git does; a key without "=" is true.
func gitBool(v string, hasValue bool) bool {
	if !hasValue {
		return true
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on":
		return true
	case "false", "no", "off", "":
		return false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return err != nil || n != 0
}

// Ident returns the author and committer git would record here, read once
// with `git var` and cached. The time is taken at each write unless
// GIT_AUTHOR_DATE / GIT_COMMITTER_DATE fix it, as they do for git.
// ErrUnsupported when git would sign commits or record an encoding.
func (o *ObjectStore) Ident(ctx context.Context) (author, committer Ident, err error) {
	set, err := o.settings(ctx)
	if err != nil {
		return Ident{}, Ident{}, err
	}
	if set.gpgSign {
		return Ident{}, Ident{}, fmt.Errorf("commit.gpgSign is set: %w", ErrUnsupported)
	}
	if set.encoding != "" {
		return Ident{}, Ident{}, fmt.Errorf("i18n.commitEncoding is %s: %w", set.encoding, ErrUnsupported)
	}
	if set.sha256 {
		return Ident{}, Ident{}, fmt.Errorf("sha256 repository: %w", ErrUnsupported)
	}
	o.identMu.Lock()
	defer o.identMu.Unlock()
	if o.idents != nil {
		return o.idents[0], o.idents[1], nil
	}
	var ids [2]Ident
	for i, v := range []string{"GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"} {
		out, err := Git(ctx, o.repo, "var", v)
		if err != nil {
			return Ident{}, Ident{}, err
		}
		id, err := parseIdent(out)
		if err != nil {
			return Ident{}, Ident{}, fmt.Errorf("git var %s: %w", v, err)
		}
		date := "GIT_AUTHOR_DATE"
		if i == 1 {
			date = "GIT_COMMITTER_DATE"
		}
		if os.Getenv(date) == "" {
			id.When = time.Time{}
		}
		ids[i] = id
	}
	o.idents = &ids
	return ids[0], ids[1], nil
}

// parseIdent reads "Name <email> 1700000000 +0100".
func parseIdent(s string) (Ident, error) {
	lt := strings.LastIndex(s, " <")
	gt := strings.LastIndex(s, "> ")
	if lt < 0 || gt < lt {
		return Ident{}, fmt.Errorf("unrecognised identity %q", s)
	}
	f := strings.Fields(s[gt+2:])
	if len(f) != 2 {
		return Ident{}, fmt.Errorf("unrecognised identity date in %q", s)
	}
	secs, err1 := strconv.ParseInt(f[0], 10, 64)
	tz, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || len(f[1]) != 5 {
		return Ident{}, fmt.Errorf("unrecognised identity date in %q", s)
	}
	off := (tz/100*60 + tz%100) * 60
	return Ident{Name: s[:lt], Email: s[lt+2 : gt], When: time.Unix(secs, 0).In(time.FixedZone("", off))}, nil
}

// identLine formats an identity as git records it.
func identLine(id Ident, now time.Time) (string, error) {
	for _, s := range []string{id.Name, id.Email} {
		if s == "" || strings.ContainsAny(s, "<>\n\x00") || isCrud(s[0]) || isCrud(s[len(s)-1]) {
			return "", fmt.Errorf("identity %q <%s> is not one git would record as is (empty, or with <, >, a newline, or leading/trailing punctuation); take it from Ident", id.Name, id.Email)
		}
	}
	t := id.When
	if t.IsZero() {
		t = now
	}
	return fmt.Sprintf("%s <%s> %d %s", id.Name, id.Email, t.Unix(), t.Format("-0700")), nil
}

// isCrud is git's set of characters stripped from the ends of names.
func isCrud(c byte) bool {
	return c <= 32 || strings.IndexByte(".,:;<>\"\\'", c) >= 0
}

// WriteCommit writes the commit `git commit-tree` would write for c (same
// bytes, so the same id) as a loose object and returns its id.
func (o *ObjectStore) WriteCommit(ctx context.Context, c NewCommit) (string, error) {
	set, err := o.settings(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case set.gpgSign:
		return "", fmt.Errorf("commit.gpgSign is set: %w", ErrUnsupported)
	case set.encoding != "":
		return "", fmt.Errorf("i18n.commitEncoding is %s: %w", set.encoding, ErrUnsupported)
	case set.sha256:
		return "", fmt.Errorf("sha256 repository: %w", ErrUnsupported)
	}
	// commit-tree checks the types; so do we, through the batch process.
	if err := o.expectType(ctx, c.Tree, "tree"); err != nil {
		return "", err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", c.Tree)
	seen := map[string]bool{}
	for _, p := range c.Parents {
		if err := o.expectType(ctx, p, "commit"); err != nil {
			return "", err
		}
		if seen[p] {
			continue // commit-tree drops a repeated parent
		}
		seen[p] = true
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	now := time.Now()
	a, err := identLine(c.Author, now)
	if err != nil {
		return "", err
	}
	cm, err := identLine(c.Committer, now)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "author %s\ncommitter %s\n\n", a, cm)
	// Each -m is a paragraph of its own, ending in a newline.
	var msg bytes.Buffer
	for _, m := range c.Messages {
		if strings.IndexByte(m, 0) >= 0 {
			return "", errors.New("commit message contains a NUL byte")
		}
		if msg.Len() > 0 {
			msg.WriteByte('\n')
		}
		msg.WriteString(m)
		if msg.Len() > 0 && msg.Bytes()[msg.Len()-1] != '\n' {
			msg.WriteByte('\n')
		}
	}
	// git rewrites a message that is not UTF-8 (as Latin-1).
	if !utf8.Valid(msg.Bytes()) {
		return "", fmt.Errorf("commit message is not UTF-8: %w", ErrUnsupported)
	}
	b.Write(msg.Bytes())
	return o.writeObject(ctx, "commit", b.Bytes(), c.Durable || o.isDurable())
}

// expectType checks that id exists and has type typ.
func (o *ObjectStore) expectType(ctx context.Context, id, typ string) error {
	if err := checkID(id); err != nil {
		return err
	}
	o.cacheMu.Lock()
	_, isTree := o.trees[id]
	_, isCommit := o.commits[id]
	o.cacheMu.Unlock()
	if (typ == "tree" && isTree) || (typ == "commit" && isCommit) {
		return nil
	}
	var err error
	switch typ {
	case "tree":
		_, err = o.tree(ctx, id)
	case "commit":
		_, err = o.commit(ctx, id)
	}
	return err
}

// objectsDir is where loose objects go: the common git dir's objects.
func (o *ObjectStore) objectsDir(ctx context.Context) (string, error) {
	o.objDirMu.Lock()
	defer o.objDirMu.Unlock()
	if o.objDir != "" {
		return o.objDir, nil
	}
	set, err := o.settings(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case set.objectsEnv:
		return "", fmt.Errorf("GIT_OBJECT_DIRECTORY is set: %w", ErrUnsupported)
	case set.shared:
		return "", fmt.Errorf("core.sharedRepository is set: %w", ErrUnsupported)
	case set.sha256:
		return "", fmt.Errorf("sha256 repository: %w", ErrUnsupported)
	}
	common, err := CommonDir(ctx, o.repo)
	if err != nil {
		return "", err
	}
	if common == "" {
		return "", fmt.Errorf("%s: %w", o.repo, ErrNotRepo)
	}
	d := filepath.Join(common, "objects")
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s has no objects directory: %w", common, ErrUnsupported)
	}
	o.objDir = d
	return d, nil
}

// writeObject writes a loose object the way git does: a temporary file in
// the object's fan-out directory, linked into place, mode 0444; an object
// that is already there is only freshened (so gc keeps it).
func (o *ObjectStore) writeObject(ctx context.Context, typ string, body []byte, durable bool) (string, error) {
	hdr := typ + " " + strconv.Itoa(len(body)) + "\x00"
	h := sha1.New()
	h.Write([]byte(hdr))
	h.Write(body)
	id := hex.EncodeToString(h.Sum(nil))
	dir, err := o.objectsDir(ctx)
	if err != nil {
		return "", err
	}
	fan := filepath.Join(dir, id[:2])
	final := filepath.Join(fan, id[2:])
	now := time.Now()
	if err := os.Chtimes(final, now, now); err == nil {
		return id, nil
	}
	newFan := !exists(fan)
	if err := os.MkdirAll(fan, 0o777); err != nil {
		return "", fmt.Errorf("write object: %w", err)
	}
	tmp, err := os.CreateTemp(fan, "tmp_obj_")
	if err != nil {
		return "", fmt.Errorf("write object: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	zw := zlibPool.Get().(*zlib.Writer)
	defer zlibPool.Put(zw)
	zw.Reset(tmp)
	_, err = zw.Write([]byte(hdr))
	if err == nil {
		_, err = zw.Write(body)
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = tmp.Chmod(0o444)
	}
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write object %s: %w", id, err)
	}
	if err := os.Link(tmpName, final); err != nil && !errors.Is(err, fs.ErrExist) {
		// Filesystems without hard links: rename, as git falls back to.
		if rerr := os.Rename(tmpName, final); rerr != nil {
			return "", fmt.Errorf("write object %s: %w", id, rerr)
		}
	}
	if durable {
		syncs := []string{fan}
		if newFan {
			syncs = append(syncs, dir) // the new fan-out directory's own entry
		}
		for _, d := range syncs {
			if err := syncDir(d); err != nil {
				return "", fmt.Errorf("write object %s: fsync %s: %w", id, d, err)
			}
		}
	}
	return id, nil
}

// zlibPool reuses compressors (their setup is most of a small write's
// CPU). git's default core.looseCompression is zlib's fastest level.
var zlibPool = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return w
}}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
