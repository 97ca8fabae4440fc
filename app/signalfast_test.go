package app

import (
	"bytes"
	"testing"

	"github.com/chorus-dev/chorus/agent/signal"
)

// `chorus signal TYPE [PAYLOAD]` skips the command tree and answers as the
// full command line does; any other shape goes to the command line.
func TestSignalFastPath(t *testing.T) {
	t.Setenv(signal.EnvDir, "")
	for _, args := range [][]string{{"signal", "COMPLETE"}, {"signal", "BLOCKED", "the key is missing"}} {
		var fast, full bytes.Buffer
		code, ok := signalFast(args, &fast)
		if !ok {
			t.Fatalf("%q: not taken by the fast path", args)
		}
		want := run(args, BuildInfo{}, bytes.NewReader(nil), &bytes.Buffer{}, &full)
		if code != want || code != ExitUsage || fast.String() != full.String() {
			t.Errorf("%q: fast path %d %q, command line %d %q", args, code, fast.String(), want, full.String())
		}
	}
	for _, args := range [][]string{{"signal"}, {"signal", "--help"}, {"signal", "NOTE", "-x"}, {"signal", "A", "b", "c"}, {"status", "x"}, {"-C", "/tmp", "signal", "COMPLETE"}} {
		if _, ok := signalFast(args, &bytes.Buffer{}); ok {
			t.Errorf("%q: taken by the fast path", args)
		}
	}
}
