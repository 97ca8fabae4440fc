package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A bd database bd cannot open: task commands say to run doctor; doctor
// says the JSONL export holds the tasks and what to run; following its
// steps (the broken database kept aside) brings every task back.
func TestDoctorCorruptBdDatabase(t *testing.T) {
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes", "--prefix", "ch"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, title := range []string{"first task", "second task"} {
		if r := chorus(t, dir, "task", "create", title); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "bd"), "github.com/chorus-dev/chorus/beads/internal/fakebd").CombinedOutput(); err != nil {
		t.Fatalf("building the bd stand-in: %v\n%s", err, out)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKEBD_QUIET", "1")
	beadsDir := filepath.Join(dir, ".beads")
	os.WriteFile(filepath.Join(beadsDir, "metadata.json"), []byte(`{"database":"dolt","backend":"dolt","dolt_mode":"embedded"}`), 0o644)
	junk := []byte("\x00\x01 not a database")
	os.WriteFile(filepath.Join(beadsDir, "fakebd.json"), junk, 0o644)

	if r := chorus(t, dir, "task", "list"); r.code == 0 || !strings.Contains(r.stderr, "chorus doctor") {
		t.Fatalf("task list on a corrupted database: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := chorus(t, dir, "doctor")
	if r.code == 0 || !strings.Contains(r.stdout, "looks corrupted") || !strings.Contains(r.stdout, ".beads/issues.jsonl holds 2 tasks") || strings.Contains(r.stdout, "run `chorus doctor`") {
		t.Fatalf("doctor: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mv := regexp.MustCompile(`mv (\S+) (\S+)`).FindStringSubmatch(r.stdout)
	if mv == nil || mv[1] != ".beads/metadata.json" {
		t.Fatalf("no step that keeps the database aside:\n%s", r.stdout)
	}
	if err := os.Rename(filepath.Join(dir, mv[1]), filepath.Join(dir, mv[2])); err != nil {
		t.Fatal(err)
	}
	r = chorus(t, dir, "task", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "first task") || !strings.Contains(r.stdout, "second task") {
		t.Fatalf("after the rebuild step: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(beadsDir, "fakebd.json")); string(b) != string(junk) {
		t.Fatal("the broken database was not kept")
	}
	if _, err := os.Stat(filepath.Join(dir, mv[2])); err != nil {
		t.Fatal(err)
	}
}
