package claudetrust

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chorus-dev/chorus/config"
)

// Every other key and every other field of the entry survive; only the
// exact path becomes trusted; a second call does not rewrite the file.
func TestTrustMergesAndKeeps(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, ".claude.json")
	orig := `{"numStartups": 7, "userID": "abc", "projects": {"/repo": {"allowedTools": ["Bash"], "hasTrustDialogAccepted": false},
	  "/other": {"hasTrustDialogAccepted": true}}, "nested": {"a": [1, 2, {"b": null}]}}`
	if err := os.WriteFile(file, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Trust(file, "/repo/.worktrees/claude-t-1/"); err != nil {
		t.Fatal(err)
	}
	if err := Trust(file, "/repo"); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["numStartups"] != float64(7) || got["userID"] != "abc" || fmt.Sprint(got["nested"]) != "map[a:[1 2 map[b:<nil>]]]" {
		t.Fatalf("other keys changed: %s", b)
	}
	p := got["projects"].(map[string]any)
	if fmt.Sprint(p["/repo"]) != "map[allowedTools:[Bash] hasTrustDialogAccepted:true]" {
		t.Fatalf("entry of /repo: %v", p["/repo"])
	}
	if !Trusted(file, "/repo/.worktrees/claude-t-1") || !Trusted(file, "/other") || Trusted(file, "/repo/.worktrees") {
		t.Fatalf("trusted paths wrong: %s", b)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", st.Mode())
	}
	st1, _ := os.Stat(file)
	if err := Trust(file, "/repo"); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(file); !os.SameFile(st1, st2) {
		t.Fatal("an already trusted path rewrote the file")
	}
}

// A missing file is created; a broken one is an error and stays as it was.
func TestTrustMissingAndBroken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cfg", ".claude.json")
	if err := Trust(file, "/w"); err != nil || !Trusted(file, "/w") {
		t.Fatalf("missing file: %v", err)
	}
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"projects": [`), 0o600)
	err := Trust(broken, "/w")
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(broken); string(b) != `{"projects": [` {
		t.Fatalf("broken file rewritten: %q", b)
	}
	if err := Trust(file, "relative/path"); err == nil {
		t.Fatal("a relative path was accepted")
	}
}

// Agents starting together each get their own entry.
func TestTrustConcurrent(t *testing.T) {
	file := filepath.Join(t.TempDir(), ".claude.json")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Trust(file, fmt.Sprintf("/repo/.worktrees/a-%d", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range 16 {
		if !Trusted(file, fmt.Sprintf("/repo/.worktrees/a-%d", i)) {
			t.Fatalf("entry %d lost", i)
		}
	}
}

func TestConfigFile(t *testing.T) {
	if got := ConfigFile([]string{"HOME=/h"}); got != "/h/.claude.json" {
		t.Fatal(got)
	}
	if got := ConfigFile([]string{"HOME=/h", "CLAUDE_CONFIG_DIR=/c"}); got != "/c/.claude.json" {
		t.Fatal(got)
	}
}

// The repository's own trust is what worktrees inherit: the path as given
// or with symlinks resolved; trustWorktrees trusts regardless; only an
// interactive Claude Code profile has a problem to report.
func TestRepoTrustInherited(t *testing.T) {
	home := t.TempDir()
	real := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(home, ".claude.json")
	claude := config.AgentProfile{Command: "claude", Format: config.FormatTerminal, Env: []string{"HOME=" + home}}
	headless := claude
	headless.Format = "stream-json"
	if RepoTrusted(file, link) || TrustsWorktrees(claude, link) {
		t.Fatal("trusted with no file")
	}
	msg := Problem("claude", claude, link)
	for _, want := range []string{"has not trusted " + link, "Run `claude` once in " + link, "agents.available.claude.trustWorktrees"} {
		if !strings.Contains(msg, want) {
			t.Errorf("problem lacks %q: %s", want, msg)
		}
	}
	if Problem("h", headless, link) != "" {
		t.Error("a headless profile meets no dialog")
	}
	explicit := claude
	explicit.TrustWorktrees = true
	if !TrustsWorktrees(explicit, link) || Problem("claude", explicit, link) != "" {
		t.Error("trustWorktrees is the explicit switch")
	}
	if err := Trust(file, real); err != nil {
		t.Fatal(err)
	}
	if !RepoTrusted(file, link) || !TrustsWorktrees(claude, link) || Problem("claude", claude, link) != "" {
		t.Fatal("the repository's trust, through its symlink, is not inherited")
	}
	if TrustsWorktrees(headless, link) {
		t.Error("a headless profile has no worktrees to trust")
	}
}
