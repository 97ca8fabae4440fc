package app

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// Kept work shows in `chorus status` (text and JSON) and goes with
// `chorus prune --kept`, oldest first when --older-than is given.
func TestStatusListsKeptAndPruneDeletes(t *testing.T) {
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	gitIn := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "init")
	head := gitIn("rev-parse", "HEAD")
	old := "refs/chorus/kept/ch-1/20200101T000000.000000000Z-wip"
	gitIn("update-ref", old, head)
	gitIn("update-ref", "refs/chorus/kept/ch-2/29990101T000000.000000000Z-tip", head)

	r := chorus(t, dir, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "2 ref(s) of saved work") || !strings.Contains(r.stdout, old) {
		t.Fatalf("status:\n%s%s", r.stdout, r.stderr)
	}
	r = chorus(t, dir, "status", "--json")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Kept) != 2 || rep.Kept[0].Ref != old || rep.Kept[0].Task != "ch-1" || rep.Kept[0].Kind != "wip" {
		t.Fatalf("status --json: %v %+v", err, rep.Kept)
	}
	if r := chorus(t, dir, "prune"); r.code != ExitUsage {
		t.Fatalf("prune without --kept: %d %s", r.code, r.stderr)
	}
	if r := chorus(t, dir, "prune", "--kept", "--older-than", "soon"); r.code != ExitUsage || !strings.Contains(r.stderr, "14d") {
		t.Fatalf("bad --older-than: %d %s", r.code, r.stderr)
	}
	r = chorus(t, dir, "prune", "--kept", "--older-than", "30d")
	if r.code != 0 || !strings.Contains(r.stdout, "deleted "+old) || strings.Contains(r.stdout, "ch-2") {
		t.Fatalf("prune --older-than: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = chorus(t, dir, "prune", "--kept")
	if r.code != 0 || !strings.Contains(r.stdout, "ch-2") {
		t.Fatalf("prune: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if out := gitIn("for-each-ref", "refs/chorus/kept/"); out != "" {
		t.Fatalf("left: %s", out)
	}
}
