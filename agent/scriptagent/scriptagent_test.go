package scriptagent

import (
	"bytes"
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
