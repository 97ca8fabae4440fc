package beads

import (
	"errors"
	"reflect"
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
		if err := decodeLine([]byte(l), &fast, true); err != nil && !errors.Is(err, errSlow) {
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
		ft, st := *fast.task, *slow.task
		normTimes(&ft)
		normTimes(&st)
		if !reflect.DeepEqual(ft, st) {
			t.Errorf("line %s\nfast %+v\nslow %+v", l, ft, st)
		}
		if fast.id != slow.id || fast.status != slow.status || fast.priority != slow.priority || !fast.created.Equal(slow.created) {
			t.Errorf("index fields differ: %+v / %+v", fast, slow)
		}
	}
}

func TestFastDecoderRejectsBadLines(t *testing.T) {
	for _, l := range []string{
		`{"id":"a","title":"trunc`,
		`{"id":"a","title":"raw ` + "\x01" + ` control"}`,
		`{"id":"a","title":"bad utf8 ` + "\xff" + `"}`,
		`{"id":"a"} trailing`,
		`{"id":"a",}`,
		`["not","an","object"]`,
	} {
		var r record
		if decodeLine([]byte(l), &r, true) == nil {
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
