package scriptagent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseAndSelect(t *testing.T) {
	src := `
@ iteration=1 prompt~alpha
print "first alpha"
@ iteration>=2
write notes.txt "a b c"
tag BLOCKED no key
@ *
exit 3
`
	secs, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 3 {
		t.Fatalf("sections: %d", len(secs))
	}
	s, _ := Select(secs, Env{Iteration: 1, Prompt: "task alpha"})
	if s.Ops[0].Name != "print" || s.Ops[0].Args[0] != "first alpha" {
		t.Fatalf("iteration 1: %+v", s)
	}
	s, _ = Select(secs, Env{Iteration: 3})
	if s.Ops[0].Args[1] != "a b c" || s.Ops[1].Args[1] != "no key" {
		t.Fatalf("iteration 3: %+v", s.Ops)
	}
	s, _ = Select(secs, Env{Iteration: 1, Prompt: "beta"})
	if s.Ops[0].Name != "exit" {
		t.Fatalf("fallback: %+v", s)
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{"frobnicate", "write onlyone", "print \"unterminated"} {
		if _, err := Parse(src); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", src, err)
		}
	}
}

func TestRunOps(t *testing.T) {
	var out bytes.Buffer
	ops, _ := Parse("print hi\ntag COMPLETE\necho-prompt\nwait-input\nexit 4\nprint never")
	code := Run(ops[0].Ops, Env{Prompt: "do it"}, strings.NewReader("answer\n"), &out)
	got := out.String()
	if code != 4 || !strings.Contains(got, "hi\n<chorus>COMPLETE</chorus>\n> do it\nreceived: answer\n") || strings.Contains(got, "never") {
		t.Fatalf("code %d out %q", code, got)
	}
}

// write expands $VARS in its path; send hands its arguments to Env.Send
// and fails without one.
func TestWriteExpandsPathAndSend(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("CHORUS_TASK_ID", "bd-7")
	ops, err := Parse("write f-$CHORUS_TASK_ID.txt $CHORUS_TASK_ID\nsend COMPLETE \"all done\"\n")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var out bytes.Buffer
	code := Run(ops[0].Ops, Env{Send: func(args []string) error { got = args; return nil }}, strings.NewReader(""), &out)
	if code != 0 {
		t.Fatalf("code %d: %s", code, out.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f-bd-7.txt")); err != nil || string(b) != "$CHORUS_TASK_ID" {
		t.Fatalf("file %q, %v (the text is not expanded, the path is)", b, err)
	}
	if strings.Join(got, "|") != "COMPLETE|all done" {
		t.Fatalf("send got %q", got)
	}
	if code := Run(ops[0].Ops[1:], Env{}, strings.NewReader(""), &out); code != 1 || !strings.Contains(out.String(), "cannot send") {
		t.Fatalf("send without Env.Send: code %d, %q", code, out.String())
	}
}
