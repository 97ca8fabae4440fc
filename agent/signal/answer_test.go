package signal

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestResolveChoice(t *testing.T) {
	opts := []string{"PostgreSQL", "SQLite"}
	for _, c := range []struct {
		in, text string
		n        int
		err      string
	}{
		{"2", "SQLite", 2, ""},
		{" 1 ", "PostgreSQL", 1, ""},
		{"3", "", 0, "choose 1 to 2"},
		{"0", "", 0, "choose 1 to 2"},
		{"neither, use files", "neither, use files", 0, ""},
		{"  ", "", 0, "empty"},
	} {
		a, err := ResolveChoice(opts, c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || a.Text != c.text || a.Choice != c.n {
			t.Errorf("%q: %+v %v", c.in, a, err)
		}
	}
	// Without options a number is just text.
	if a, err := ResolveChoice(nil, "42"); err != nil || a.Text != "42" || a.Choice != 0 {
		t.Errorf("free numeric answer: %+v %v", a, err)
	}
}

// The asker waits for its own file: an answer to another question does not
// wake it, its own does; a second answer to the same question is refused.
func TestWaitAnswer(t *testing.T) {
	dir := t.TempDir()
	q, err := Ask("which\x1b[31m one?", []string{"a", "b\nc"})
	if err != nil || q.Text != "which[31m one?" || q.Options[1] != "b c" || CheckQuestionID(q.ID) != nil {
		t.Fatalf("%+v %v", q, err)
	}
	other, _ := NewQuestionID()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan Answer, 1)
	errc := make(chan error, 1)
	go func() {
		a, err := WaitAnswer(ctx, dir, q.ID)
		errc <- err
		got <- a
	}()
	if err := WriteAnswer(dir, other, Answer{Text: "not yours"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteAnswer(dir, q.ID, Answer{Text: "b c", Choice: 2}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if a := <-got; a.Text != "b c" || a.Choice != 2 || a.Question != q.ID {
		t.Fatalf("answer %+v", a)
	}
	if err := WriteAnswer(dir, q.ID, Answer{Text: "again"}); err == nil || !strings.Contains(err.Error(), "already answered") {
		t.Fatalf("second answer: %v", err)
	}
	if err := WriteAnswer(dir, "../../etc/passwd", Answer{Text: "x"}); err == nil {
		t.Fatal("a path was accepted as a question id")
	}
	// An answer written before the wait starts is found at once.
	if a, err := WaitAnswer(ctx, dir, other); err != nil || a.Text != "not yours" {
		t.Fatalf("%+v %v", a, err)
	}
}
