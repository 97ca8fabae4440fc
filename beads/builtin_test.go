package beads_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/beads/storetest"
)

var bg = context.Background()

func builtin(t *testing.T, repo string) beads.Store {
	t.Helper()
	return open(t, beads.OpenOptions{RepoDir: repo, Prefix: "ch", Actor: "tester"}, beads.BackendBuiltin)
}

func writeJSONL(t *testing.T, repo string, lines ...string) string {
	t.Helper()
	dir := filepath.Join(repo, ".beads")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "issues.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The line bd export produced in the contract measurements, plus fields
// Chorus does not know, must read and survive a rewrite.
const bdLine = `{"_type":"issue","id":"ch-3ae","title":"Implement API","status":"open","priority":2,"issue_type":"task","owner":"dev@example.com","created_at":"2026-11-22T02:31:43Z","created_by":"orchestrator","updated_at":"2026-11-22T02:31:44Z","labels":["backend"],"dependencies":[{"issue_id":"ch-3ae","depends_on_id":"ch-l4t","type":"blocks","created_at":"2026-11-22T02:31:43Z","created_by":"orchestrator","metadata":"{}"}],"comments":[{"id":"c1","issue_id":"ch-3ae","author":"a","text":"hi","created_at":"2026-11-22T02:31:43Z"}],"metadata":{"model":"opus","custom":{"x":[1,2]}},"dependency_count":1,"dependent_count":0,"comment_count":1}`
const blockerLine = `{"_type":"issue","id":"ch-l4t","title":"Blocker","status":"closed","priority":1,"issue_type":"task","created_at":"2026-11-22T02:31:40Z","updated_at":"2026-11-22T02:31:41Z","closed_at":"2026-11-22T02:31:41Z","close_reason":"done"}`
const memoryLine = `{"_type":"memory","key":"k","value":"v"}`

func TestBuiltinReadsBdExportAndKeepsUnknownFields(t *testing.T) {
	repo := initRepo(t)
	p := writeJSONL(t, repo, blockerLine, bdLine, memoryLine)
	s := builtin(t, repo)
	g, err := s.Get(bg, "ch-3ae")
	if err != nil {
		t.Fatal(err)
	}
	if g.Title != "Implement API" || g.CreatedBy != "orchestrator" || !slices.Equal(g.Labels, []string{"backend"}) ||
		!slices.Equal(g.BlockedBy(), []string{"ch-l4t"}) || g.Metadata["model"] != "opus" {
		t.Fatalf("decoded %+v", g)
	}
	if want := time.Date(2026, 11, 22, 2, 31, 43, 0, time.UTC); !g.CreatedAt.Equal(want) {
		t.Errorf("created_at %v", g.CreatedAt)
	}
	if _, err := s.Claim(bg, "ch-3ae", "agent1"); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, p)
	if len(lines) != 3 || lines[0] != blockerLine || lines[2] != memoryLine {
		t.Fatalf("untouched lines changed:\n%s", strings.Join(lines, "\n"))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"owner", "comments", "dependency_count", "comment_count"} {
		if _, ok := m[k]; !ok {
			t.Errorf("rewrite lost %q: %s", k, lines[1])
		}
	}
	if m["_type"] != "issue" || m["assignee"] != "agent1" || m["status"] != "in_progress" {
		t.Errorf("rewrite: %s", lines[1])
	}
	if md := m["metadata"].(map[string]any); md["custom"] == nil {
		t.Errorf("metadata lost: %v", md)
	}
	deps := m["dependencies"].([]any)
	if d := deps[0].(map[string]any); d["metadata"] != "{}" || d["created_by"] != "orchestrator" {
		t.Errorf("dependency record lost fields: %v", d)
	}
}

func readLines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

func TestBuiltinWritesImportableRecords(t *testing.T) {
	repo := initRepo(t)
	s := builtin(t, repo)
	a, err := s.Create(bg, "a", beads.CreateOptions{Model: "sonnet", Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(bg, "b", beads.CreateOptions{Deps: []string{a.ID}, Labels: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, filepath.Join(repo, ".beads", "issues.jsonl"))
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	var rec struct {
		Type         string `json:"_type"`
		ID           string `json:"id"`
		Status       string `json:"status"`
		Priority     *int   `json:"priority"`
		IssueType    string `json:"issue_type"`
		CreatedAt    string `json:"created_at"`
		UpdatedAt    string `json:"updated_at"`
		Dependencies []map[string]any
		Metadata     map[string]any
	}
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Type != "issue" || rec.ID != b.ID || rec.Status != "open" || rec.Priority == nil || *rec.Priority != 2 || rec.IssueType != "task" {
		t.Errorf("record %s", lines[1])
	}
	if _, err := time.Parse(time.RFC3339Nano, rec.CreatedAt); err != nil || !strings.HasSuffix(rec.CreatedAt, "Z") {
		t.Errorf("created_at %q", rec.CreatedAt)
	}
	d := rec.Dependencies[0]
	if d["issue_id"] != b.ID || d["depends_on_id"] != a.ID || d["type"] != "blocks" || d["created_at"] == nil {
		t.Errorf("dependency record %v", d)
	}
	var ra struct{ Metadata map[string]any }
	_ = json.Unmarshal([]byte(lines[0]), &ra)
	if ra.Metadata["model"] != "sonnet" || ra.Metadata["agent"] != "claude" {
		t.Errorf("metadata %s", lines[0])
	}
	if st := git(t, repo, "status", "--porcelain", "--untracked-files=all"); strings.Contains(st, "chorus.lock") || strings.Contains(st, ".tmp") {
		t.Errorf("runtime files show in git status:\n%s", st)
	}
	if !regexp.MustCompile(`^ch-[0-9a-z]{3,8}$`).MatchString(a.ID) {
		t.Errorf("id %q is not <prefix>-<base36>", a.ID)
	}
}

func TestBuiltinMalformedLine(t *testing.T) {
	repo := initRepo(t)
	good1 := `{"_type":"issue","id":"ch-a","title":"A","status":"open","priority":1,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
	good2 := `{"_type":"issue","id":"ch-b","title":"B","status":"open","priority":2,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
	p := writeJSONL(t, repo, good1, "", good2, `{"_type":"issue","id":"ch-c","title":"trunc`)
	before, _ := os.ReadFile(p)
	s := builtin(t, repo)
	all, err := s.List(bg)
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %d, %v", len(all), err)
	}
	r, err := s.Ready(bg, beads.ReadyOptions{})
	if err != nil || len(r) != 2 || r[0].ID != "ch-a" {
		t.Fatalf("Ready = %v, %v", r, err)
	}
	_, err = s.Create(bg, "new", beads.CreateOptions{})
	if !errors.Is(err, beads.ErrMalformed) {
		t.Fatalf("Create on malformed file: %v", err)
	}
	want := p + ":4: unexpected end of JSON input — fix or remove that line"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q\nwant it to contain %q", err, want)
	}
	if _, err := s.Claim(bg, "ch-a", "x"); !errors.Is(err, beads.ErrMalformed) {
		t.Errorf("Claim on malformed file: %v", err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Fatal("malformed file was rewritten")
	}
	if le := s.(interface{ LoadError() error }).LoadError(); !errors.Is(le, beads.ErrMalformed) {
		t.Errorf("LoadError = %v", le)
	}
	// Once the user fixes the line, writes work again.
	writeJSONL(t, repo, good1, good2)
	if _, err := s.Create(bg, "new", beads.CreateOptions{}); err != nil {
		t.Fatalf("after fix: %v", err)
	}
}

func TestBuiltinDuplicateIDIsMalformed(t *testing.T) {
	repo := initRepo(t)
	line := `{"id":"ch-a","title":"A","status":"open","priority":1,"created_at":"2026-01-01T00:00:00Z"}`
	writeJSONL(t, repo, line, line)
	s := builtin(t, repo)
	_, err := s.Create(bg, "x", beads.CreateOptions{})
	if !errors.Is(err, beads.ErrMalformed) || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("got %v", err)
	}
}

// Ready follows bd's rules beyond plain blocks edges.
func TestBuiltinReadySemantics(t *testing.T) {
	repo := initRepo(t)
	future := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-48 * time.Hour).UTC().Format(time.RFC3339)
	rec := func(id, extra string) string {
		return `{"_type":"issue","id":"` + id + `","title":"` + id + `","status":"open","priority":2,"issue_type":"task","created_at":"2026-01-01T00:00:0` + id[len(id)-1:] + `Z"` + extra + `}`
	}
	dep := func(from, to, typ string) string {
		return `"dependencies":[{"issue_id":"` + from + `","depends_on_id":"` + to + `","type":"` + typ + `","created_at":"2026-01-01T00:00:00Z"}]`
	}
	writeJSONL(t, repo,
		rec("p1", ``), // parent, blocked by b1
		rec("b1", ``), // blocker of p1 (ready itself)
		`{"id":"x0","title":"x","status":"open","priority":2,"created_at":"2026-01-01T00:00:00Z",`+dep("p1", "b1", "blocks")+`}`,
		rec("c1", ","+dep("c1", "p1", "parent-child")), // child of blocked parent: held
		rec("g1", ","+dep("g1", "c1", "parent-child")), // grandchild: one level only, ready
		rec("d1", `,"defer_until":"`+future+`"`),       // deferred by date
		rec("d2", `,"defer_until":"`+past+`"`),         // deferral over: ready
		rec("e1", `,"ephemeral":true`),                 // wisp
		`{"id":"m1","title":"m","status":"open","priority":2,"issue_type":"molecule","created_at":"2026-01-01T00:00:00Z"}`,
		rec("r1", ","+dep("r1", "b1", "related")),      // related never blocks
		rec("n1", ","+dep("n1", "ch-ghost", "blocks")), // blocker missing: not blocking
		`{"id":"k1","title":"pinned","status":"pinned","priority":2,"created_at":"2026-01-01T00:00:00Z"}`,
		rec("q1", ","+dep("q1", "k1", "blocks")), // pinned blocker does not block
		`{"id":"s1","title":"ip","status":"in_progress","priority":2,"created_at":"2026-01-01T00:00:00Z"}`,
		rec("t1", ","+dep("t1", "s1", "conditional-blocks")),
		rec("u1", `,"assignee":"someone"`), // assigned but open: ready, as in bd
	)
	s := builtin(t, repo)
	got, err := s.Ready(bg, beads.ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"b1", "g1", "d2", "r1", "n1", "q1", "u1", "x0"}
	if !storetest.SameSet(storetest.IDs(got), want) {
		t.Fatalf("ready %v\nwant  %v", storetest.IDs(got), want)
	}
}

func TestBuiltinPrefix(t *testing.T) {
	for _, p := range []string{"ch", "ch-", " ch- "} {
		repo := initRepo(t)
		s := open(t, beads.OpenOptions{RepoDir: repo, Prefix: p}, beads.BackendBuiltin)
		x, err := s.Create(bg, "x", beads.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^ch-[0-9a-z]+$`).MatchString(x.ID) {
			t.Errorf("prefix %q gave id %q", p, x.ID)
		}
	}
	repo := initRepo(t)
	if err := os.MkdirAll(filepath.Join(repo, ".beads"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repo, ".beads", "config.yaml"), []byte("# bd config\nissue-prefix: \"api-\"\n"), 0o644)
	s := open(t, beads.OpenOptions{RepoDir: repo}, beads.BackendBuiltin)
	if x, err := s.Create(bg, "x", beads.CreateOptions{}); err != nil || !strings.HasPrefix(x.ID, "api-") || strings.HasPrefix(x.ID, "api--") {
		t.Errorf("config prefix: %q %v", x.ID, err)
	}
}

// From a linked worktree the store is the main repo's .beads, never the
// worktree's checked-out copy.
func TestBuiltinLinkedWorktree(t *testing.T) {
	repo := initRepo(t)
	s := builtin(t, repo)
	x, err := s.Create(bg, "in main", beads.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", ".beads/issues.jsonl")
	git(t, repo, "commit", "-q", "-m", "tasks")
	wt := filepath.Join(t.TempDir(), "wt1")
	git(t, repo, "worktree", "add", "-q", "-b", "agent1", wt)
	sub := filepath.Join(wt, "sub", "dir")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := beads.MainBeadsDir(sub)
	if err != nil {
		t.Fatal(err)
	}
	mainReal, _ := filepath.EvalSymlinks(filepath.Join(repo, ".beads"))
	gotReal, _ := filepath.EvalSymlinks(got)
	if gotReal != mainReal {
		t.Fatalf("MainBeadsDir from worktree = %s, want %s", got, mainReal)
	}
	common := git(t, sub, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if cr, _ := filepath.EvalSymlinks(filepath.Join(filepath.Dir(common), ".beads")); cr != gotReal {
		t.Errorf("git says %s, we say %s", cr, gotReal)
	}
	ws := builtin(t, sub)
	y, err := ws.Create(bg, "from worktree", beads.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(bg, y.ID); err != nil {
		t.Errorf("main store does not see the worktree's task: %v", err)
	}
	if _, err := ws.Claim(bg, x.ID, "agent1"); err != nil {
		t.Fatal(err)
	}
	wtCopy, _ := os.ReadFile(filepath.Join(wt, ".beads", "issues.jsonl"))
	if bytes.Contains(wtCopy, []byte(y.ID)) || bytes.Contains(wtCopy, []byte("agent1")) {
		t.Error("the worktree's checked-out copy was written")
	}
}

// Exactly one of several OS processes wins a claim.
func TestBuiltinClaimAcrossProcesses(t *testing.T) {
	repo := initRepo(t)
	s := builtin(t, repo)
	x, err := s.Create(bg, "contended", beads.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	codes := helpers(t, n, func(i int) []string {
		return []string{"CHORUS_BEADS_HELPER=claim", "HELPER_DIR=" + repo, "HELPER_ID=" + x.ID, fmt.Sprintf("HELPER_ACTOR=agent%d", i)}
	})
	wins, lost := 0, 0
	for _, c := range codes {
		switch c {
		case 0:
			wins++
		case 3:
			lost++
		}
	}
	if wins != 1 || lost != n-1 {
		t.Fatalf("exit codes %v: want one 0 and %d 3s", codes, n-1)
	}
	g, _ := s.Get(bg, x.ID)
	if g.Status != beads.StatusInProgress || !strings.HasPrefix(g.Assignee, "agent") {
		t.Errorf("after race: %q %q", g.Status, g.Assignee)
	}
}

// Concurrent writers in separate processes lose nothing.
func TestBuiltinCreateAcrossProcesses(t *testing.T) {
	repo := initRepo(t)
	const n, each = 4, 5
	codes := helpers(t, n, func(i int) []string {
		return []string{"CHORUS_BEADS_HELPER=create", "HELPER_DIR=" + repo, fmt.Sprintf("HELPER_ACTOR=w%d", i), fmt.Sprintf("HELPER_N=%d", each)}
	})
	for _, c := range codes {
		if c != 0 {
			t.Fatalf("exit codes %v", codes)
		}
	}
	all, err := builtin(t, repo).List(bg)
	if err != nil || len(all) != n*each {
		t.Fatalf("List = %d tasks, %v; want %d", len(all), err, n*each)
	}
}

func TestDetectBackend(t *testing.T) {
	repo := initRepo(t)
	info, err := beads.DetectBackend(repo, "")
	if err != nil || info.Name != beads.BackendBuiltin {
		t.Fatalf("plain repo: %+v %v", info, err)
	}
	// A bd database without bd: a clear error, not a silent fallback.
	dolt := filepath.Join(repo, ".beads", "embeddeddolt")
	if err := os.MkdirAll(dolt, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err = beads.DetectBackend(repo, filepath.Join(t.TempDir(), "no-bd-here"))
	if !errors.Is(err, beads.ErrBdMissing) || info.Name != beads.BackendBd {
		t.Fatalf("db without bd: %+v %v", info, err)
	}
	for _, want := range []string{"https://github.com/gastownhall/beads", "built-in store", "embeddeddolt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := beads.Open(bg, beads.OpenOptions{RepoDir: repo, BdPath: "/nonexistent/bd"}); !errors.Is(err, beads.ErrBdMissing) {
		t.Errorf("Open: %v", err)
	}
	os.Remove(dolt)
	info, err = beads.DetectBackend(bdRepo(t), fakeBd(t))
	if err != nil || info.Name != beads.BackendBd || info.BdPath == "" {
		t.Fatalf("metadata.json + bd: %+v %v", info, err)
	}
}

// Lines encoding/json rejects make the file malformed at load, with file
// and line, so doctor reports them and writes refuse with the same words.
func TestBuiltinLaxLinesAreMalformed(t *testing.T) {
	for _, bad := range []string{
		`{"_type":"issue","id":"ch-b","title":"B","status":"open","priority":1,"x":+}`,
		`{"_type":"issue","id":"ch-b","title":"B","status":"open","priority":007}`,
		"{\"_type\":\"issue\",\"id\":\"ch-b\",\"title\":\"B\x01\",\"status\":\"open\",\"priority\":1}",
	} {
		repo := initRepo(t)
		good := `{"_type":"issue","id":"ch-a","title":"A","status":"open","priority":1,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
		p := writeJSONL(t, repo, good, bad)
		s := builtin(t, repo)
		le := s.(interface{ LoadError() error }).LoadError()
		if !errors.Is(le, beads.ErrMalformed) || !strings.Contains(le.Error(), p+":2:") {
			t.Errorf("%q: LoadError = %v", bad, le)
		}
		if err := s.AddLabel(bg, "ch-a", "x"); !errors.Is(err, beads.ErrMalformed) || !strings.Contains(err.Error(), p+":2:") {
			t.Errorf("%q: write: %v", bad, err)
		}
	}
}
