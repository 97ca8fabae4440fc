package orchestrator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/merge"
)

func stateJSON(t *testing.T, s *State) string {
	t.Helper()
	c := *s
	c.JournalGen = 0
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func loadEqual(t *testing.T, path string, want *State) {
	t.Helper()
	got, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("no state loaded")
	}
	if g, w := stateJSON(t, got), stateJSON(t, want); g != w {
		t.Fatalf("loaded state differs:\n got %s\nwant %s", g, w)
	}
}

// saveLoadEqual saves st and checks that it loads back as it is.
func saveLoadEqual(t *testing.T, w *stateWriter, path string, st *State) {
	t.Helper()
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	loadEqual(t, path, st)
}

func journalLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// A save appends only what changed, nothing when nothing did, and loading
// replays the journal over the snapshot to the state last saved.
func TestStateJournalAppendsOnlyChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w := newStateWriter(path)
	st := newState("autopilot")
	for _, id := range []string{"a-1", "a-2", "a-3"} {
		st.run(id).Iterations = 1
	}
	if err := w.save(st); err != nil { // the first save is a snapshot
		t.Fatal(err)
	}
	if n := len(journalLines(t, path)); n != 0 {
		t.Fatalf("journal after the first save has %d lines", n)
	}
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	if n := len(journalLines(t, path)); n != 0 {
		t.Fatalf("a save without changes wrote %d lines", n)
	}
	st.Tasks["a-2"].Iterations = 2
	st.Agents["script-a-2"] = &AgentState{ID: "script-a-2", TaskID: "a-2", Status: AgentRunning}
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	lines := journalLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("journal has %d lines, want 1", len(lines))
	}
	var rec journalRecord
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Set) != 2 || rec.Set["task/a-2"] == nil || rec.Set["agent/script-a-2"] == nil {
		t.Fatalf("record sets %v, want only task/a-2 and agent/script-a-2", keys(rec.Set))
	}
	delete(st.Agents, "script-a-2")
	st.MergeQueue = []merge.Item{{Request: merge.Request{TaskID: "a-2", Branch: "agent/x/a-2"}, Status: merge.StatusLanding}}
	st.Paused = true
	saveLoadEqual(t, w, path, st)
	if _, ok := mustLoad(t, path).Agents["script-a-2"]; ok {
		t.Fatal("a deleted agent came back on load")
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func mustLoad(t *testing.T, path string) *State {
	t.Helper()
	s, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Once the journal outgrows the snapshot it is folded into a new one and
// emptied; the state loads the same either side of that.
func TestStateJournalCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w := newStateWriter(path)
	st := newState("autopilot")
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	gen := w.gen
	compacted := false
	for i := 0; i < 5000 && !compacted; i++ {
		st.run("t-1").Iterations = i + 1
		st.Stats.Iterations = i
		if err := w.save(st); err != nil {
			t.Fatal(err)
		}
		compacted = w.gen != gen
	}
	if !compacted {
		t.Fatal("the journal never compacted")
	}
	if n := len(journalLines(t, path)); n != 0 {
		t.Fatalf("journal after compaction has %d lines", n)
	}
	loadEqual(t, path, st)
	st.run("t-1").Iterations++
	saveLoadEqual(t, w, path, st)
}

// A crash after the new snapshot and before the journal was emptied leaves
// lines of the old generation: they are already in the snapshot and are
// skipped. A line cut short by a crash is ignored.
func TestStateJournalCrashLeftovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w := newStateWriter(path)
	st := newState("autopilot")
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	st.run("x-1").Iterations = 3
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	// A newer snapshot in which x-1 went on: the old line must not undo it.
	st.run("x-1").Iterations = 4
	if err := newStateWriter(path).save(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journalPath(path), append(old, `{"gen":1,"seq":`...), 0o644); err != nil {
		t.Fatal(err)
	}
	loadEqual(t, path, st)
}

// A journal that does not read is an error naming the file and line, and
// neither file is changed.
func TestStateJournalMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w := newStateWriter(path)
	st := newState("autopilot")
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		st.run("m-1").Iterations = i
		if err := w.save(st); err != nil {
			t.Fatal(err)
		}
	}
	lines := journalLines(t, path)
	for name, bad := range map[string][]string{
		"garbage": {lines[0], "not json at all", lines[2]},
		"gap":     {lines[0], lines[2]},
	} {
		t.Run(name, func(t *testing.T) {
			body := strings.Join(bad, "\n") + "\n"
			if err := os.WriteFile(journalPath(path), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			snap, _ := os.ReadFile(path)
			_, err := LoadState(path)
			if err == nil || !strings.Contains(err.Error(), journalPath(path)+":2:") || !strings.Contains(err.Error(), "move both aside") {
				t.Fatalf("error %v, want one naming %s:2 and what to do", err, journalPath(path))
			}
			if b, _ := os.ReadFile(journalPath(path)); string(b) != body {
				t.Fatal("the journal was changed")
			}
			if b, _ := os.ReadFile(path); string(b) != string(snap) {
				t.Fatal("state.json was changed")
			}
		})
	}
}

// State.save (a whole snapshot) drops the journal, so lines written after
// an older snapshot never apply to it.
func TestStateSaveDropsJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w := newStateWriter(path)
	st := newState("autopilot")
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	st.run("d-1").Iterations = 7
	if err := w.save(st); err != nil {
		t.Fatal(err)
	}
	fresh := newState("semi-auto")
	if err := fresh.save(path); err != nil {
		t.Fatal(err)
	}
	loadEqual(t, path, fresh)
}

// A task's JSON is reused only while the task is unchanged: changes made in
// place, deep inside (a merge request's dependencies), are written, and a
// task deleted and made again is not served from the old copy.
func TestStateJournalTaskMemoSeesInPlaceChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w := newStateWriter(path)
	st := newState("autopilot")
	st.run("a-1").Merge = &merge.Request{TaskID: "a-1", Branch: "agent/x/a-1", DependsOn: []string{"a-0"}}
	st.run("a-2").Iterations = 1
	for _, change := range []func(){
		func() {},
		func() { st.Tasks["a-1"].Merge.DependsOn[0] = "a-9" },
		func() { st.Tasks["a-1"].Merge.DependsOn = append(st.Tasks["a-1"].Merge.DependsOn, "a-8") },
		func() { st.Tasks["a-1"].Merge = nil },
		func() { st.Tasks["a-2"].Usage.CostUSD = 0.5 },
		func() { delete(st.Tasks, "a-2") },
		func() { st.run("a-2").Iterations = 1 },
	} {
		change()
		saveLoadEqual(t, w, path, st)
	}
}

// The queue's JSON is json.Marshal's, and stays so through changes made in
// place (deep inside too) while items' JSON is reused.
func TestStateJournalQueueMemo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w := newStateWriter(path)
	st := newState("autopilot")
	st.MergeQueue = []merge.Item{
		{Request: merge.Request{TaskID: "a-1", Branch: "agent/x/a-1", DependsOn: []string{"a-0"}}, Status: merge.StatusPending, Seq: 1},
		{Request: merge.Request{TaskID: "a-2", Branch: "agent/x/a-2"}, Status: merge.StatusLanded, Seq: 2, ConflictFiles: []string{"f"}},
	}
	memo := map[string]*itemMemo{}
	for i, change := range []func(){
		func() {},
		func() { st.MergeQueue[1].ConflictFiles[0] = "g" },
		func() { st.MergeQueue[0].DependsOn = append(st.MergeQueue[0].DependsOn, "a-9") },
		func() { st.MergeQueue[0].Status = merge.StatusLanding },
		func() {
			st.MergeQueue = append(st.MergeQueue[:1], merge.Item{Request: merge.Request{TaskID: "a-2"}, Seq: 7})
		},
		func() { st.MergeQueue = st.MergeQueue[:0] },
		func() { st.MergeQueue = nil },
	} {
		change()
		want, _ := json.Marshal(st.MergeQueue)
		if got, err := queueJSON(st.MergeQueue, memo); err != nil || string(got) != string(want) {
			t.Fatalf("step %d: queue JSON\n got %s\nwant %s (%v)", i, got, want, err)
		}
		saveLoadEqual(t, w, path, st)
	}
}

// A journal line is what json.Marshal writes for the record.
func TestJournalRecordEncodeMatchesMarshal(t *testing.T) {
	for _, r := range []journalRecord{
		{Gen: 1, Seq: 1},
		{Gen: 17, Seq: 3, Set: map[string]json.RawMessage{"task/a-1": json.RawMessage(`{"iterations":2}`), "meta": json.RawMessage(`{"mode":"autopilot"}`), "agent/\"q\"<&>": json.RawMessage(`null`)}},
		{Gen: 2, Seq: 9, Del: []string{"agent/x", "task/é"}},
		{Gen: 2, Seq: 10, Set: map[string]json.RawMessage{"mergeQueue": json.RawMessage(`[{"taskId":"a"},{"taskId":"b"}]`)}, Del: []string{"task/z"}},
	} {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.encode()
		if err != nil || string(got) != string(want) {
			t.Errorf("encode\n got %s\nwant %s (%v)", got, want, err)
		}
	}
}
