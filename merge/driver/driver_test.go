package driver

import (
	"strings"
	"testing"
)

func TestMergeLearningsAppendsBothAndDedupes(t *testing.T) {
	base := "# Learnings\n"
	ours := base + "\n## ch-1\n- use X\n"
	theirs := base + "\n## ch-2\n- use X\n- use Y\n"
	got := string(MergeLearnings([]byte(base), []byte(ours), []byte(theirs)))
	want := "# Learnings\n\n## ch-1\n- use X\n\n## ch-2\n- use Y\n"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

// Two learnings of one task each keep their Source line; an entry ours
// has already is not added twice.
func TestMergeLearningsKeepsSourceLines(t *testing.T) {
	base := "# Learnings\n"
	src := "  Source: ch-2 (2026-01-09, claude)"
	ours := base + "\n- use X\n  Source: ch-1 (2026-01-09, codex)\n"
	theirs := base + "\n- use Y\n" + src + "\n- use Z\n" + src + "\n- use X\n  Source: ch-1 (2026-01-09, codex)\n"
	got := string(MergeLearnings([]byte(base), []byte(ours), []byte(theirs)))
	want := ours + "\n- use Y\n" + src + "\n- use Z\n" + src + "\n"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestMergeJSONL(t *testing.T) {
	base := `{"id":"a","status":"pending"}` + "\n" + `{"id":"c","status":"open"}` + "\n"
	ours := `{"id":"a","status":"in_progress"}` + "\n" + `{"id":"c","status":"open"}` + "\n"
	theirs := `{"id":"a","status":"pending"}` + "\n" + `{"id":"b","status":"pending"}` + "\n"
	got, conf := MergeJSONL([]byte(base), []byte(ours), []byte(theirs))
	if len(conf) != 0 {
		t.Fatal(conf)
	}
	want := `{"id":"a","status":"in_progress"}` + "\n" + `{"id":"b","status":"pending"}` + "\n"
	if string(got) != want {
		t.Fatalf("got %q want %q", got, want)
	}
	// The same record changed differently on both sides is a conflict.
	theirs2 := `{"id":"a","status":"closed"}` + "\n"
	_, conf = MergeJSONL([]byte(base), []byte(ours), []byte(theirs2))
	if strings.Join(conf, ",") != "a" {
		t.Fatalf("conflicts %v", conf)
	}
}
