package beads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The ready cache is exercised through fresh stores, one per read, the way
// separate `chorus task ready --json` processes see it.

const testFormat = "test-json"

func renderJSON(ts []Task) ([]byte, error) { return json.Marshal(ts) }

func cacheRepo(t *testing.T, lines ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".beads"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".beads", "issues.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func freshStore(t *testing.T, dir string) *builtinStore {
	t.Helper()
	s, err := openBuiltin(filepath.Join(dir, ".beads"), OpenOptions{Prefix: "ch", Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// uncachedReady is the answer without the cache.
func uncachedReady(t *testing.T, dir string, opt ReadyOptions, now time.Time) []byte {
	t.Helper()
	s := freshStore(t, dir)
	s.now = func() time.Time { return now }
	ts, err := s.Ready(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := renderJSON(ts)
	return b
}

func cachedReady(t *testing.T, dir string, opt ReadyOptions, now time.Time) ([]byte, bool) {
	t.Helper()
	s := freshStore(t, dir)
	s.now = func() time.Time { return now }
	var b bytes.Buffer
	computed, err := s.CachedReady(context.Background(), &b, opt, testFormat, renderJSON)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), computed
}

// checkReady asserts that the cache gives the uncached answer and says
// whether it was computed.
func checkReady(t *testing.T, dir string, opt ReadyOptions, now time.Time, wantComputed bool) []byte {
	t.Helper()
	got, computed := cachedReady(t, dir, opt, now)
	if want := uncachedReady(t, dir, opt, now); !bytes.Equal(got, want) {
		t.Fatalf("cached answer differs from the uncached one\ncached   %s\nuncached %s", got, want)
	}
	if computed != wantComputed {
		t.Fatalf("computed = %v, want %v", computed, wantComputed)
	}
	return got
}

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".beads", readyCacheDir, "ready-*"))
	return m
}

func issue(id, status string, prio int, extra string) string {
	return fmt.Sprintf(`{"_type":"issue","id":%q,"title":"Task %s","description":"about <%s> & more","status":%q,"priority":%d,"issue_type":"task","created_at":"2026-01-01T00:00:0%dZ","updated_at":"2026-01-01T00:00:00Z"%s}`,
		id, id, id, status, prio, prio, extra)
}

func dep(id, on, typ string) string {
	return fmt.Sprintf(`,"dependencies":[{"issue_id":%q,"depends_on_id":%q,"type":%q,"created_at":"2026-01-01T00:00:00Z"}]`, id, on, typ)
}

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func mixedTasks() []string {
	return []string{
		issue("ch-a", "open", 2, ""),
		issue("ch-b", "open", 1, dep("ch-b", "ch-a", "blocks")),
		issue("ch-c", "closed", 0, ""),
		issue("ch-d", "open", 0, dep("ch-d", "ch-c", "blocks")),
		issue("ch-e", "in_progress", 1, `,"assignee":"someone"`),
		issue("ch-f", "open", 3, `,"labels":["deferred","x"]`),
		issue("ch-g", "open", 2, `,"defer_until":"2026-06-01T13:00:00Z"`),
		issue("ch-h", "open", 2, `,"defer_until":"2026-05-01T00:00:00Z"`),
		issue("ch-i", "open", 4, dep("ch-i", "ch-g", "parent-child")),
		`{"_type":"memory","key":"k","value":"v"}`,
	}
}

func TestCachedReadyMatchesUncached(t *testing.T) {
	dir := cacheRepo(t, mixedTasks()...)
	for _, opt := range []ReadyOptions{{}, {IncludeDeferred: true}} {
		checkReady(t, dir, opt, t0, true)
		checkReady(t, dir, opt, t0, false)
	}
	if n := len(cacheFiles(t, dir)); n != 2 {
		t.Errorf("%d cache files, want one per variant", n)
	}
	// A different rendering never gets another's answer.
	s := freshStore(t, dir)
	var b bytes.Buffer
	computed, err := s.CachedReady(context.Background(), &b, ReadyOptions{}, "other", func(ts []Task) ([]byte, error) { return []byte("other"), nil })
	if err != nil || !computed || b.String() != "other" {
		t.Errorf("other format: %q %v %v", b.String(), computed, err)
	}
}

// An answer rendered by another build of Chorus is not served: its Task
// or its JSON may differ.
func TestCachedReadyOtherBinary(t *testing.T) {
	dir := cacheRepo(t, mixedTasks()...)
	checkReady(t, dir, ReadyOptions{}, t0, true)
	checkReady(t, dir, ReadyOptions{}, t0, false)
	real := exeID
	t.Cleanup(func() { exeID = real })
	exeID = func() string { return "another-build" }
	checkReady(t, dir, ReadyOptions{}, t0, true)
	checkReady(t, dir, ReadyOptions{}, t0, false)
}

// Writes through the store, by any process, change the file's identity
// and so the answer.
func TestCachedReadyFollowsWrites(t *testing.T) {
	dir := cacheRepo(t, mixedTasks()...)
	ctx := context.Background()
	prev := checkReady(t, dir, ReadyOptions{}, t0, true)
	for _, w := range []struct {
		name string
		do   func(s *builtinStore) error
	}{
		{"create", func(s *builtinStore) error {
			_, err := s.Create(ctx, "new", CreateOptions{Priority: 0, PrioritySet: true})
			return err
		}},
		{"claim", func(s *builtinStore) error { _, err := s.Claim(ctx, "ch-a", "agent"); return err }},
		{"close", func(s *builtinStore) error { return s.Close(ctx, "ch-a", "done") }},
		{"dependency", func(s *builtinStore) error { return s.AddDependency(ctx, "ch-d", "ch-b") }},
		{"label", func(s *builtinStore) error { return s.AddLabel(ctx, "ch-h", LabelDeferred) }},
		{"priority", func(s *builtinStore) error { p := 4; _, err := s.Update(ctx, "ch-b", Update{Priority: &p}); return err }},
	} {
		if err := w.do(freshStore(t, dir)); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		got := checkReady(t, dir, ReadyOptions{}, t0, true)
		if bytes.Equal(got, prev) {
			t.Fatalf("%s did not change the ready list", w.name)
		}
		checkReady(t, dir, ReadyOptions{}, t0, false)
		prev = got
	}
}

// Another process rewriting the file with the same size, in place (same
// inode) or through a rename as bd and editors do, still invalidates.
func TestCachedReadySameSizeRewriteByAnotherProcess(t *testing.T) {
	for _, c := range []struct {
		name, script string
		sameInode    bool
	}{
		{"in place", `cat "$1" > "$2"`, true},
		{"rename", `cp "$1" "$2.tmp" && mv "$2.tmp" "$2"`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := cacheRepo(t, mixedTasks()...)
			path := filepath.Join(dir, ".beads", "issues.jsonl")
			before := checkReady(t, dir, ReadyOptions{}, t0, true)
			checkReady(t, dir, ReadyOptions{}, t0, false)
			old, _ := os.ReadFile(path)
			// ch-a from priority 2 to 0: same length, new order.
			changed := bytes.Replace(old, []byte(`"status":"open","priority":2`), []byte(`"status":"open","priority":0`), 1)
			if len(changed) != len(old) || bytes.Equal(changed, old) {
				t.Fatal("test edit is not a same-size change")
			}
			src := filepath.Join(t.TempDir(), "new.jsonl")
			os.WriteFile(src, changed, 0o644)
			ino := inode(t, path)
			if out, err := exec.Command("sh", "-c", c.script, "sh", src, path).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			if (inode(t, path) == ino) != c.sameInode {
				t.Fatal("the rewrite did not go the intended way")
			}
			after := checkReady(t, dir, ReadyOptions{}, t0, true)
			if bytes.Equal(before, after) {
				t.Fatal("the answer did not change")
			}
		})
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return keyOf(st).ino
}

// A damaged cache file is never believed, and the next computation
// replaces it.
func TestCachedReadyRepairsDamagedCache(t *testing.T) {
	dir := cacheRepo(t, mixedTasks()...)
	checkReady(t, dir, ReadyOptions{}, t0, true)
	files := cacheFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("cache files: %v", files)
	}
	good, _ := os.ReadFile(files[0])
	nl := bytes.IndexByte(good, '\n') + 1
	header := bytes.IndexByte(good[nl:], '\n') + nl + 1
	flipped := bytes.Clone(good)
	flipped[len(flipped)-2] ^= 1
	for name, b := range map[string][]byte{
		"empty":           {},
		"garbage":         []byte("\x00\xffnot a cache at all\n"),
		"truncated":       good[:len(good)/2],
		"header only":     good[:header],
		"payload flipped": flipped,
		"extra bytes":     append(bytes.Clone(good), "x"...),
		"other version":   append([]byte("chorus-ready-cache 0\n"), good[nl:]...),
		"bad header":      append(append(bytes.Clone(good[:nl]), "1 2 3\n"...), good[header:]...),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(files[0], b, 0o644); err != nil {
				t.Fatal(err)
			}
			checkReady(t, dir, ReadyOptions{}, t0, true)
			checkReady(t, dir, ReadyOptions{}, t0, false)
		})
	}
	// Unreadable is a miss too.
	os.Remove(files[0])
	os.Mkdir(files[0], 0o755)
	checkReady(t, dir, ReadyOptions{}, t0, true)
}

// An entry written in the same filesystem clock tick as the task file
// changed is checked against the file's content: a same-size change in
// that tick would leave the identity unchanged.
func TestCachedReadyRacyEntryChecksContent(t *testing.T) {
	dir := cacheRepo(t, mixedTasks()...)
	path := filepath.Join(dir, ".beads", "issues.jsonl")
	checkReady(t, dir, ReadyOptions{}, t0, true)
	file := cacheFiles(t, dir)[0]
	old, _ := os.ReadFile(path)
	oldSum := fmt.Sprintf("%x", sha256.Sum256(old))
	changed := bytes.Replace(old, []byte(`"priority":2`), []byte(`"priority":0`), 1)
	if err := os.WriteFile(path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	// Forge what the race leaves: an entry naming the file's current
	// identity but computed from the old content.
	setEntry := func(sum string) {
		b, _ := os.ReadFile(file)
		rest := b[len(readyCacheMagic):]
		nl := bytes.IndexByte(rest, '\n')
		e, ok := parseEntry(string(rest[:nl]))
		if !ok {
			t.Fatal("unreadable entry")
		}
		st, _ := os.Stat(path)
		e.key, e.sum = keyOf(st), sum
		os.WriteFile(file, append([]byte(readyCacheMagic+e.header()), rest[nl+1:]...), 0o644)
	}
	setEntry(oldSum)
	checkReady(t, dir, ReadyOptions{}, t0, true)
	// The same entry with the right content hash is served.
	setEntry(fmt.Sprintf("%x", sha256.Sum256(changed)))
	checkReady(t, dir, ReadyOptions{}, t0, false)
}

func TestRacy(t *testing.T) {
	file := fileKey{ok: true, dev: 1, ino: 2, size: 3, mtimeNanos: 100, ctimeNanos: 100}
	for _, c := range []struct {
		stamp fileKey
		want  bool
	}{
		{fileKey{dev: 1, ctimeNanos: 101}, false},
		{fileKey{dev: 1, ctimeNanos: 100}, true}, // same tick
		{fileKey{dev: 1, ctimeNanos: 99}, true},  // clock stepped back
		{fileKey{dev: 2, ctimeNanos: 101}, true}, // another filesystem's clock
	} {
		if got := racy(file, c.stamp); got != c.want {
			t.Errorf("racy(%+v, %+v) = %v", file, c.stamp, got)
		}
	}
}

// Crossing a defer_until date changes the answer with no write at all.
func TestCachedReadyDeferUntil(t *testing.T) {
	dir := cacheRepo(t, mixedTasks()...) // ch-g deferred until 13:00, ch-h until May
	ids := func(b []byte) string {
		var ts []Task
		json.Unmarshal(b, &ts)
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return strings.Join(out, ",")
	}
	before := checkReady(t, dir, ReadyOptions{}, t0, true)
	checkReady(t, dir, ReadyOptions{}, t0.Add(59*time.Minute), false)
	after := checkReady(t, dir, ReadyOptions{}, t0.Add(time.Hour), true)
	if strings.Contains(ids(before), "ch-g") || !strings.Contains(ids(after), "ch-g") || !strings.Contains(ids(after), "ch-i") {
		t.Fatalf("before %s, after %s", ids(before), ids(after))
	}
	// A clock set back before ch-h's date brings its deferral back.
	back := checkReady(t, dir, ReadyOptions{}, time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), true)
	if strings.Contains(ids(back), "ch-h") {
		t.Fatalf("clock set back: %s", ids(back))
	}
}

// A file with an unreadable line is answered around it, never cached.
func TestCachedReadySkipsMalformedFile(t *testing.T) {
	dir := cacheRepo(t, append(mixedTasks(), `{"id":"ch-z","title":"broken`)...)
	checkReady(t, dir, ReadyOptions{}, t0, true)
	checkReady(t, dir, ReadyOptions{}, t0, true)
	if f := cacheFiles(t, dir); len(f) != 0 {
		t.Fatalf("cached a malformed file: %v", f)
	}
}

// No task file: nothing to cache, and no .beads created for it.
func TestCachedReadyWithoutTaskFile(t *testing.T) {
	dir := t.TempDir()
	b, computed := cachedReady(t, dir, ReadyOptions{}, t0)
	if string(b) != "[]" || !computed {
		t.Fatalf("%q %v", b, computed)
	}
	if _, err := os.Stat(filepath.Join(dir, ".beads")); !os.IsNotExist(err) {
		t.Fatalf(".beads created: %v", err)
	}
}

// A read-only .beads still answers.
func TestCachedReadyReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := cacheRepo(t, mixedTasks()...)
	os.Chmod(filepath.Join(dir, ".beads"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, ".beads"), 0o755) })
	checkReady(t, dir, ReadyOptions{}, t0, true)
}

// The cache never shows up in git, whatever .beads/.gitignore holds.
func TestCachedReadyIgnoredByGit(t *testing.T) {
	dir := cacheRepo(t, mixedTasks()...)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return string(out)
	}
	run("init", "-q", "-b", "main")
	// bd's own ignore file, which knows nothing of Chorus.
	os.WriteFile(filepath.Join(dir, ".beads", ".gitignore"), []byte("*.db\n*.lock\n"), 0o644)
	checkReady(t, dir, ReadyOptions{}, t0, true)
	if len(cacheFiles(t, dir)) != 1 {
		t.Fatal("no cache written")
	}
	status := run("status", "--porcelain", "--untracked-files=all")
	if strings.Contains(status, readyCacheDir) || !strings.Contains(status, ".beads/issues.jsonl") {
		t.Fatalf("git status:\n%s", status)
	}
}
