package beads

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/proc"
)

func TestFastDecoderMatchesEncodingJSON(t *testing.T) {
	lines := []string{
		`{"_type":"issue","id":"ch-3ae","title":"Implement API","status":"open","priority":2,"issue_type":"task","owner":"x","created_at":"2026-11-22T02:31:43Z","created_by":"orchestrator","updated_at":"2026-11-22T02:31:43.123456789Z","labels":["backend"],"dependencies":[{"issue_id":"ch-3ae","depends_on_id":"ch-l4t","type":"blocks","created_at":"2026-11-22T02:31:43Z","created_by":"o","metadata":"{}"}],"dependency_count":1}`,
		` { "id" : "a" , "title" : "esc \" \\ \/ \n \t \u00e9 \u2028" , "priority" : 0 , "status":"closed", "closed_at":"2026-01-01T00:00:00.5Z", "close_reason":"done", "started_at": null, "metadata": {"model":"m","n":[1,2.5,{"x":null}],"b":true} } `,
		`{"id":"b","title":"emoji \ud83d\ude00 and raw ✓ 日本","priority":4,"created_at":"2026-01-01T01:02:03+02:00","labels":[],"dependencies":null,"notes":"n","acceptance_criteria":"ac","description":"d"}`,
		`{"id":"c","title":"t","priority":-1,"assignee":"a\\b","extra":{"deep":[[[]]]},"ephemeral":false}`,
	}
	for _, l := range lines {
		var fast, slow record
		if err := decodeLine([]byte(l), &fast); err != nil && !errors.Is(err, errSlow) {
			t.Fatalf("fast: %v", err)
		} else if err != nil {
			// Some shapes (surrogate pairs) are the slow path's job.
			if err := decodeSlow([]byte(l), &fast); err != nil {
				t.Fatal(err)
			}
		}
		if err := decodeSlow([]byte(l), &slow); err != nil {
			t.Fatalf("slow: %v", err)
		}
		if !slices.Equal(fast.labels, slow.labels) || !sameIndexDeps(fast.deps, slow.deps) || fast.itype != slow.itype {
			t.Errorf("line %s\nfast %+v\nslow %+v", l, fast, slow)
		}
		fp, fc := fast.order()
		sp, sc := slow.order()
		if fast.id != slow.id || fast.status != slow.status || fp != sp || !fc.Equal(sc) {
			t.Errorf("index fields differ: %+v / %+v", fast, slow)
		}
	}
}

func TestFastDecoderRejectsBadLines(t *testing.T) {
	for _, l := range []string{
		`{"id":"a","title":"trunc`,
		`{"id":"a","title":"raw ` + "\x01" + ` control"}`,
		`{"id":"a","assignee":"bad utf8 ` + "\xff" + `"}`, // a kept field: encoding/json's replacement rules apply
		`{"id":"a"} trailing`,
		`{"id":"a",}`,
		`["not","an","object"]`,
	} {
		var r record
		if decodeLine([]byte(l), &r) == nil {
			t.Errorf("fast path accepted %q", l)
		}
	}
}

func TestFastTime(t *testing.T) {
	for _, s := range []string{"2026-11-22T02:31:43Z", "2026-11-22T02:31:43.1Z", "2026-11-22T02:31:43.123456789Z", "2024-02-29T23:59:59Z"} {
		want, _ := time.Parse(time.RFC3339Nano, s)
		got, ok := fastTime([]byte(s))
		if !ok || !got.Equal(want) {
			t.Errorf("%s: %v %v", s, got, ok)
		}
	}
	for _, s := range []string{"2026-02-30T00:00:00Z", "2026-11-22T02:31:43+01:00", "2026-13-01T00:00:00Z", "2026-11-22 02:31:43Z"} {
		if _, ok := fastTime([]byte(s)); ok {
			t.Errorf("%s accepted", s)
		}
	}
}

func TestBdFailure(t *testing.T) {
	cases := []struct {
		stdout, stderr string
		kind           error
		msg            string
	}{
		{`{"error":"no issues found matching the provided IDs","schema_version":1}`, "warning: beads.role not configured (GH#2950)\nError fetching x: no issue found matching \"x\"\n", ErrNotFound, "no issues found matching the provided IDs"},
		{"", "warning: x\nError claiming ch-p7n: issue already claimed by agent1\n", ErrClaimed, "Error claiming ch-p7n: issue already claimed by agent1"},
		{"", "Error claiming X: issue not claimable: status closed\n", ErrNotOpen, "Error claiming X: issue not claimable: status closed"},
		{"", "cannot close X: blocked by open issues [Y] (use --force to override)\n", ErrNotReady, "cannot close X: blocked by open issues [Y] (use --force to override)"},
		{`{"error":"adding dependency would create a cycle","schema_version":1}`, "", ErrCycle, "adding dependency would create a cycle"},
		{"", `{"error":"operation 'create' is not allowed in read-only mode","schema_version":1}`, nil, "operation 'create' is not allowed in read-only mode"},
		{`{"schema_version":1,"data":{"error":"enveloped"}}`, "", nil, "enveloped"},
		{"", "Warning: something\nsomething odd happened\n", nil, "something odd happened"},
		{"", "", nil, "exit status 1"},
		// bd 1.0.5 on a damaged embedded Dolt database: Dolt's logfmt
		// warning, then the pretty-printed error object, on stderr.
		{"", "time=\"2026-11-28T05:11:46Z\" level=warning msg=\"Error getting database bdc\"\n{\n  \"error\": \"failed to open database: embeddeddolt: open db: failed to load database \\\"bdc\\\": corrupt manifest\",\n  \"schema_version\": 1\n}\n",
			ErrCorrupt, "failed to open database: embeddeddolt: open db: failed to load database \"bdc\": corrupt manifest"},
	}
	for _, c := range cases {
		err := bdFailure([]string{"x"}, proc.Result{Stdout: []byte(c.stdout), Stderr: []byte(c.stderr), ExitCode: 1})
		var be *BdError
		if !errors.As(err, &be) || be.Msg != c.msg || (c.kind != nil && !errors.Is(err, c.kind)) {
			t.Errorf("%q / %q: got %v (%#v)", c.stdout, c.stderr, err, be)
		}
	}
}

func TestUnwrapJSON(t *testing.T) {
	if got := string(unwrapJSON([]byte(`{"schema_version":1,"data":[{"id":"a"}]}`))); got != `[{"id":"a"}]` {
		t.Errorf("envelope: %s", got)
	}
	obj := `{"id":"a","data":"x","schema_version":1}`
	if got := string(unwrapJSON([]byte(obj))); got != obj {
		t.Errorf("plain object changed: %s", got)
	}
}

func TestCyclePath(t *testing.T) {
	g := map[string][]string{"b": {"a"}, "c": {"b"}, "d": {"c", "x"}}
	next := func(id string) []string { return g[id] }
	if got := cyclePath("a", "d", next); got != "a → d → c → b → a" {
		t.Errorf("got %q", got)
	}
	if got := cyclePath("a", "a", next); got != "a → a" {
		t.Errorf("self: %q", got)
	}
	if got := cyclePath("x", "a", next); got != "" {
		t.Errorf("no cycle: %q", got)
	}
}

func TestQuoteOrBackslash(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, r.IntN(120))
		for i := range b {
			switch r.IntN(40) {
			case 0:
				b[i] = '"'
			case 1:
				b[i] = '\\'
			default:
				b[i] = byte(r.IntN(256))
			}
		}
		from := 0
		if len(b) > 0 {
			from = r.IntN(len(b) + 1)
		}
		want := from
		for want < len(b) && b[want] != '"' && b[want] != '\\' {
			want++
		}
		if got := quoteOrBackslash(b, from); got != want {
			t.Fatalf("quoteOrBackslash(%q, %d) = %d, want %d", b, from, got, want)
		}
	}
}

// A big file is decoded in parallel chunks; the snapshot, Ready's answer
// and the error reported must be those of one sequential pass.
func TestParallelDecodeMatchesSequential(t *testing.T) {
	var b strings.Builder
	for i := range 6000 {
		id := fmt.Sprintf("ch-%04d", i)
		switch i {
		case 1200:
			b.WriteString(`{"id":"ch-broken","title":"trunc` + "\n")
			continue
		case 4700:
			id = "ch-0010" // duplicate of a line in the first chunk
		case 5100:
			b.WriteString("\n   \n")
		case 5300:
			b.WriteString(`{"title":"no id","status":"open"}` + "\n")
			continue
		}
		status := []string{"open", "open", "closed", "in_progress"}[i%4]
		title := fmt.Sprintf("Task %d", i)
		if i == 3333 {
			title = "raw \x01 control" // found only when the task is decoded in full
		}
		fmt.Fprintf(&b, `{"id":%q,"title":%q,"status":%q,"priority":%d,"created_at":"2026-01-01T00:00:00Z","labels":["l%d"],"dependencies":[{"issue_id":%q,"depends_on_id":"ch-%04d","type":"blocks"}]}`+"\n",
			id, title, status, i%5, i%3, id, (i*7)%1500*4+2) // a closed task, mostly
	}
	data := []byte(b.String())
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	run := func(procs int) (*snapshot, []Task) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		sn := parseSnapshot(bytes.Clone(data), "issues.jsonl")
		return sn, readyTasks(sn, ReadyOptions{}, now)
	}
	seq, seqReady := run(1)
	par, parReady := run(4)
	if len(seq.recs) != len(par.recs) || !reflect.DeepEqual(seq.byID, par.byID) {
		t.Fatalf("records %d/%d, ids %d/%d", len(seq.recs), len(par.recs), len(seq.byID), len(par.byID))
	}
	for i := range seq.recs {
		a, b := *seq.recs[i], *par.recs[i]
		var am, bm recordMore
		if a.more != nil {
			am = *a.more
		}
		if b.more != nil {
			bm = *b.more
		}
		am.task, bm.task = nil, nil
		a.more, b.more = &am, &bm
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("record %d differs:\n%+v\n%+v", i, a, b)
		}
	}
	if fmt.Sprint(seq.bad) != fmt.Sprint(par.bad) || !strings.Contains(fmt.Sprint(seq.bad), ":1201:") {
		t.Errorf("errors: %v / %v", seq.bad, par.bad)
	}
	if len(seqReady) < 1000 || !reflect.DeepEqual(seqReady, parReady) {
		t.Errorf("ready: %d / %d tasks", len(seqReady), len(parReady))
	}
}

func TestClassifyCorrupt(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want error
	}{
		{"Error: failed to open database: invalid character 'x' looking for beginning of value", ErrCorrupt},
		{"database disk image is malformed", ErrCorrupt},
		{"chunk checksum mismatch in table file", ErrCorrupt},
		{"failed to open database: post-migration validation failed: found 16 orphaned dependencies", ErrCorrupt},
		{"failed to open database: database is locked", nil},
		{"failed to open database: dial tcp 127.0.0.1:3307: connection refused", nil},
		{"failed to open database: open x: permission denied", nil},
		{"no issue found matching ch-1", ErrNotFound},
	} {
		if got := classify(tc.msg); got != tc.want {
			t.Errorf("classify(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
	e := &BdError{Args: []string{"list"}, Msg: "corrupt", kind: ErrCorrupt}
	if !errors.Is(e, ErrCorrupt) || !strings.Contains(e.Error(), "chorus doctor") {
		t.Errorf("%v", e)
	}
}

// Every field of a record is found in its table with its own bit and
// checker, whatever slot it shares; other keys are not found.
func TestFieldTablesFindEveryField(t *testing.T) {
	for _, c := range []struct {
		table  *fieldTable
		keys   map[string]uint
		checks map[string]checker
	}{{topFields(), topKeys(), topChecks()}, {depFields(), depKeys(), depChecks()}} {
		for name, bit := range c.keys {
			f := c.table.find([]byte(name))
			if f == nil || f.name != name || f.bit != bit || (f.check == nil) != (c.checks[name] == nil) {
				t.Errorf("%q: found %+v, want bit %d", name, f, bit)
			}
		}
		for _, k := range []string{"x", "titles", "titl", "statu", "unknown_field", "_typ"} {
			if f := c.table.find([]byte(k)); f != nil {
				t.Errorf("%q found as %q", k, f.name)
			}
		}
	}
	// A table where every key shares one slot still finds each.
	tb := newFieldTable(map[string]uint{"ab": 0, "ba": 1, "aab": 2}, nil)
	for name, bit := range map[string]uint{"ab": 0, "ba": 1, "aab": 2} {
		if f := tb.find([]byte(name)); f == nil || f.bit != bit {
			t.Errorf("%q: found %+v", name, f)
		}
	}
}
