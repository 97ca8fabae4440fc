package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/merge"
)

// The engine's state is state.json (a snapshot) plus state.journal: one
// line per save holding only the pieces that changed since the last one
// (an agent, a task, the merge queue, the session fields), written with
// one fsync. The journal is folded into a new snapshot once it outgrows
// the snapshot, so a save costs what changed, not the whole state, and
// loading replays at most a few times the snapshot's size.
//
// Each snapshot carries a generation; journal lines carry the generation
// they follow and a sequence number from 1. A crash between writing a
// snapshot and emptying the journal leaves lines of the old generation,
// which are skipped; a line cut short by a crash (no newline) was never
// acknowledged and is ignored; anything else that does not read is an
// error naming the file and line, and both files are left as they are.

// journalPath is where the journal of the state file at path lives.
func journalPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".journal"
}

// journalRecord is one line of the journal.
type journalRecord struct {
	Gen int64                      `json:"gen"`
	Seq uint64                     `json:"seq"`
	Set map[string]json.RawMessage `json:"set,omitempty"`
	Del []string                   `json:"del,omitempty"`
}

// encode writes the record as json.Marshal would, but copies the pieces'
// JSON as it is: they come from json.Marshal, so they are valid and
// compact already, and json.Marshal would scan every byte of them again
// (the merge queue's piece grows with the items waiting for clean-up).
func (r *journalRecord) encode() ([]byte, error) {
	b := fmt.Appendf(nil, `{"gen":%d,"seq":%d`, r.Gen, r.Seq)
	if len(r.Set) > 0 {
		keys := make([]string, 0, len(r.Set))
		for k := range r.Set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, `,"set":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			kj, err := json.Marshal(k)
			if err != nil {
				return nil, err
			}
			b = append(append(append(b, kj...), ':'), r.Set[k]...)
		}
		b = append(b, '}')
	}
	if len(r.Del) > 0 {
		dj, err := json.Marshal(r.Del)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"del":`...), dj...)
	}
	return append(b, '}'), nil
}

// Piece keys: the session fields, one agent, one task, the merge queue.
const (
	pieceMeta  = "meta"
	pieceQueue = "mergeQueue"
	pieceAgent = "agent/"
	pieceTask  = "task/"
)

// taskMemo is a task as last marshalled: a deep copy of its value and its
// JSON. Finished tasks do not change, so the many of a long run cost a
// comparison per save instead of a marshal.
type taskMemo struct {
	val  TaskRun
	json []byte
}

// statePiecesMemo marshals the state piece by piece, reusing the JSON of
// tasks equal to their memo (nil: no memo), and refreshes the memo.
func statePiecesMemo(s *State, memo map[string]*taskMemo, qmemo map[string]*itemMemo) (map[string][]byte, error) {
	out := make(map[string][]byte, 2+len(s.Agents)+len(s.Tasks))
	meta := *s
	meta.Agents, meta.Tasks, meta.MergeQueue, meta.JournalGen = nil, nil, nil, 0
	b, err := json.Marshal(&meta)
	if err != nil {
		return nil, err
	}
	out[pieceMeta] = b
	if b, err = queueJSON(s.MergeQueue, qmemo); err != nil {
		return nil, err
	}
	out[pieceQueue] = b
	for id, a := range s.Agents {
		if b, err = json.Marshal(a); err != nil {
			return nil, err
		}
		out[pieceAgent+id] = b
	}
	for id, t := range s.Tasks {
		if m := memo[id]; m != nil && sameTaskRun(&m.val, t) {
			out[pieceTask+id] = m.json
			continue
		}
		if b, err = json.Marshal(t); err != nil {
			return nil, err
		}
		out[pieceTask+id] = b
		if memo != nil {
			memo[id] = &taskMemo{val: copyTaskRun(t), json: b}
		}
	}
	for id := range memo {
		if _, ok := s.Tasks[id]; !ok {
			delete(memo, id)
		}
	}
	return out, nil
}

// itemMemo is a merge queue item as last marshalled (a deep copy and its
// JSON): landed items wait in the queue for their clean-up, and a busy
// queue is saved on every step of every item.
type itemMemo struct {
	val  merge.Item
	json []byte
}

// queueJSON is the queue as a JSON array (what json.Marshal gives), each
// item's JSON reused while the item is unchanged (nil memo: none kept).
func queueJSON(q []merge.Item, memo map[string]*itemMemo) ([]byte, error) {
	if q == nil {
		return []byte("null"), nil
	}
	b := []byte{'['}
	seen := make(map[string]bool, len(q))
	for i := range q {
		it := &q[i]
		key := it.TaskID + "\x00" + strconv.FormatUint(it.Seq, 10)
		seen[key] = true
		m := memo[key]
		if m == nil || !reflect.DeepEqual(&m.val, it) {
			j, err := json.Marshal(it)
			if err != nil {
				return nil, err
			}
			c := *it
			c.DependsOn = slices.Clone(it.DependsOn)
			c.ConflictFiles = slices.Clone(it.ConflictFiles)
			m = &itemMemo{val: c, json: j}
			if memo != nil {
				memo[key] = m
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m.json...)
	}
	for k := range memo {
		if !seen[k] {
			delete(memo, k)
		}
	}
	return append(b, ']'), nil
}

// sameTaskRun compares two task runs field by field. (A field that cannot
// be compared with == stops this from compiling: handle it here.)
func sameTaskRun(a, b *TaskRun) bool {
	x, y := *a, *b
	xm, ym := x.Merge, y.Merge
	x.Merge, y.Merge = nil, nil
	if x != y || (xm == nil) != (ym == nil) {
		return false
	}
	if xm == nil {
		return true
	}
	return reflect.DeepEqual(*xm, *ym)
}

func copyTaskRun(t *TaskRun) TaskRun {
	c := *t
	if t.Merge != nil {
		m := *t.Merge
		m.DependsOn = slices.Clone(m.DependsOn)
		c.Merge = &m
	}
	return c
}

// applyPiece sets one piece of s from its JSON.
func applyPiece(s *State, key string, raw json.RawMessage) error {
	switch {
	case key == pieceMeta:
		var m State
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		m.Agents, m.Tasks, m.MergeQueue, m.JournalGen = s.Agents, s.Tasks, s.MergeQueue, s.JournalGen
		*s = m
	case key == pieceQueue:
		var q []merge.Item
		if err := json.Unmarshal(raw, &q); err != nil {
			return err
		}
		s.MergeQueue = q
	case strings.HasPrefix(key, pieceAgent):
		var a AgentState
		if err := json.Unmarshal(raw, &a); err != nil {
			return err
		}
		s.Agents[strings.TrimPrefix(key, pieceAgent)] = &a
	case strings.HasPrefix(key, pieceTask):
		var t TaskRun
		if err := json.Unmarshal(raw, &t); err != nil {
			return err
		}
		s.Tasks[strings.TrimPrefix(key, pieceTask)] = &t
	default:
		return fmt.Errorf("unknown piece %q", key)
	}
	return nil
}

func deletePiece(s *State, key string) {
	switch {
	case strings.HasPrefix(key, pieceAgent):
		delete(s.Agents, strings.TrimPrefix(key, pieceAgent))
	case strings.HasPrefix(key, pieceTask):
		delete(s.Tasks, strings.TrimPrefix(key, pieceTask))
	case key == pieceQueue:
		s.MergeQueue = nil
	}
}

// replayJournal applies the journal's lines of the snapshot's generation.
func replayJournal(s *State, jpath string) error {
	b, err := os.ReadFile(jpath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	want := uint64(1)
	for n := 1; len(b) > 0; n++ {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			// Cut short by a crash: its save never returned.
			return nil
		}
		line := b[:i]
		b = b[i+1:]
		bad := func(why string) error {
			return fmt.Errorf("%s:%d: %s (state.json and this journal are left as they are; move both aside to start fresh — running agents from that session will not be recovered)", jpath, n, why)
		}
		var r journalRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return bad("not a journal record: " + err.Error())
		}
		if r.Gen == 0 || r.Seq == 0 {
			return bad("a journal record without generation or sequence")
		}
		if r.Gen != s.JournalGen {
			continue // written before the snapshot was: already in it
		}
		if r.Seq != want {
			return bad(fmt.Sprintf("record %d where %d was expected: records are missing", r.Seq, want))
		}
		want++
		keys := make([]string, 0, len(r.Set))
		for k := range r.Set {
			keys = append(keys, k)
		}
		sort.Strings(keys) // meta before the rest is not needed: pieces are disjoint
		for _, k := range keys {
			if err := applyPiece(s, k, r.Set[k]); err != nil {
				return bad(fmt.Sprintf("piece %s: %v", k, err))
			}
		}
		for _, k := range r.Del {
			deletePiece(s, k)
		}
	}
	return nil
}

// stateWriter saves the engine's state: the first save and every save once
// the journal has outgrown the snapshot write a snapshot; the others append
// what changed. Callers serialise saves (the loop, or stMu once it ended).
type stateWriter struct {
	path, jpath string
	f           *os.File
	last        map[string][]byte // pieces as last written
	gen         int64
	seq         uint64
	jbytes      int // journal size since the snapshot
	snapBytes   int
	compact     bool                 // the next save writes a snapshot
	memo        map[string]*taskMemo // tasks as last marshalled
	qmemo       map[string]*itemMemo // merge queue items as last marshalled
}

func newStateWriter(path string) *stateWriter {
	return &stateWriter{path: path, jpath: journalPath(path), compact: true}
}

// compactAt: the journal is folded into a snapshot once it is larger than
// this many times the snapshot (plus a floor, so small states do not
// rewrite their snapshot every few saves).
const (
	compactRatio = 4
	compactFloor = 256 << 10
)

func (w *stateWriter) save(s *State) error {
	if w.memo == nil {
		w.memo = map[string]*taskMemo{}
	}
	if w.qmemo == nil {
		w.qmemo = map[string]*itemMemo{}
	}
	pieces, err := statePiecesMemo(s, w.memo, w.qmemo)
	if err != nil {
		return err
	}
	if w.compact || w.jbytes > compactRatio*w.snapBytes+compactFloor {
		return w.snapshot(s, pieces)
	}
	rec := journalRecord{Gen: w.gen, Seq: w.seq + 1, Set: map[string]json.RawMessage{}}
	for k, b := range pieces {
		if old, ok := w.last[k]; !ok || !bytes.Equal(old, b) {
			rec.Set[k] = b
		}
	}
	for k := range w.last {
		if _, ok := pieces[k]; !ok {
			rec.Del = append(rec.Del, k)
		}
	}
	if len(rec.Set) == 0 && len(rec.Del) == 0 {
		return nil // nothing changed: nothing to write
	}
	sort.Strings(rec.Del)
	line, err := rec.encode()
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if _, err := w.f.Write(line); err != nil {
		// A partial line would swallow the next one: start over with a
		// snapshot next time.
		w.compact = true
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.compact = true
		return err
	}
	w.seq++
	w.jbytes += len(line)
	w.last = pieces
	return nil
}

// snapshot writes state.json whole under a new generation, then empties
// the journal. Until the journal is emptied its lines carry the old
// generation, and loading skips them.
func (w *stateWriter) snapshot(s *State, pieces map[string][]byte) error {
	gen := time.Now().UnixNano()
	if gen <= w.gen {
		gen = w.gen + 1
	}
	s.JournalGen = gen
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := chorusdir.WriteAtomic(w.path, append(b, '\n'), chorusdir.FileMode); err != nil {
		return err
	}
	if w.f == nil {
		f, err := os.OpenFile(w.jpath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, chorusdir.FileMode)
		if err != nil {
			return err
		}
		w.f = f
		if d, err := os.Open(filepath.Dir(w.jpath)); err == nil {
			_ = d.Sync()
			d.Close()
		}
	} else if err := w.f.Truncate(0); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return err
	}
	w.gen, w.seq, w.jbytes, w.snapBytes, w.last, w.compact = gen, 0, 0, len(b), pieces, false
	return nil
}

// saveState persists the engine's state (see stateWriter).
func (e *Engine) saveState() error { return e.stw.save(e.st) }
