package orchestrator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-dev/chorus/merge"
)

// An append to merge-history.jsonl that a kill cut short (a SIGKILL stops
// a write of more than a page between pages) leaves a last line with no
// newline. The next finished merge is still read back: the old code
// appended it to the cut line, both were skipped as damaged, and with it
// gone from state.json too, the landed task was lost from the queue.
func TestMergeHistoryAfterACutAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "merge-history.jsonl")
	if err := os.WriteFile(path, []byte(`{"taskId":"t-1","status":"landed","cle`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &mergeHistory{path: path, done: map[string]string{}}
	done := merge.Item{Request: merge.Request{TaskID: "t-2"}, Status: merge.StatusLanded, Cleaned: true, MergeCommit: "abc"}
	if rest, err := h.split([]merge.Item{done}); err != nil || len(rest) != 0 {
		t.Fatalf("split: %v %v", rest, err)
	}
	items, err := (&mergeHistory{path: path, done: map[string]string{}}).load()
	if err != nil || len(items) != 1 || items[0].TaskID != "t-2" || items[0].MergeCommit != "abc" {
		t.Fatalf("read back %+v (%v)", items, err)
	}
}
