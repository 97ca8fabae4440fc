package config

import (
	"os"
	"path/filepath"
	"testing"
)

// SetKey changes one key and nothing else: a file Save wrote comes out as
// Save would write it with the key set; a hand-written one keeps its order,
// its unknown keys and its numbers as written.
func TestSetKey(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved.json")
	c := Default()
	if err := Save(saved, c); err != nil {
		t.Fatal(err)
	}
	if err := SetKey(saved, "merge.targetBranch", "trunk"); err != nil {
		t.Fatal(err)
	}
	c.Merge.TargetBranch = "trunk"
	want := filepath.Join(dir, "want.json")
	if err := Save(want, c); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(saved)
	w, _ := os.ReadFile(want)
	if string(got) != string(w) {
		t.Errorf("SetKey on a saved file:\n%s\nwant:\n%s", got, w)
	}

	hand := filepath.Join(dir, "hand.json")
	os.WriteFile(hand, []byte(`{"mode":"autopilot","zeta":{"x":1.50},"agents":{"maxParallel":2}}`), 0o644)
	if err := SetKey(hand, "merge.targetBranch", "main"); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(hand)
	wantHand := "{\n  \"mode\": \"autopilot\",\n  \"zeta\": {\n    \"x\": 1.50\n  },\n  \"agents\": {\n    \"maxParallel\": 2\n  },\n  \"merge\": {\n    \"targetBranch\": \"main\"\n  }\n}\n"
	if string(got) != wantHand {
		t.Errorf("hand-written file:\n%s\nwant:\n%s", got, wantHand)
	}
	if _, err := load(hand, "", nil); err != nil {
		t.Errorf("the edited file does not load: %v", err)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`[1,2]`), 0o644)
	if err := SetKey(bad, "merge.targetBranch", "main"); err == nil {
		t.Error("an array was edited as an object")
	}
}
