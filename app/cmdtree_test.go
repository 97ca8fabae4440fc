package app

import (
	"bytes"
	"strings"
	"testing"
)

func TestCommandName(t *testing.T) {
	root := newRootCmd(BuildInfo{}, []string{"--version"})
	for _, c := range []struct {
		args []string
		name string
		ok   bool
	}{
		{nil, "", true},
		{[]string{"--version"}, "", true},
		{[]string{"-v"}, "", true},
		{[]string{"--headless", "--task", "ch-1", "--json"}, "", true},
		{[]string{"--mode=autopilot", "--max-agents", "3"}, "", true},
		{[]string{"status"}, "status", true},
		{[]string{"-C", "dir", "status"}, "status", true},
		{[]string{"-Cdir", "status", "--json"}, "status", true},
		{[]string{"--directory", "status", "task"}, "task", true}, // "status" is -C's value
		{[]string{"--config=c.json", "task", "list"}, "task", true},
		{[]string{"--config", "c.json", "-C", "d", "merge", "approve", "x"}, "merge", true},
		{[]string{"--autopilot", "attach"}, "attach", true},
		{[]string{"help", "status"}, "help", true},
		{[]string{"--help"}, "", false},
		{[]string{"-h", "status"}, "", false},
		{[]string{"-C", "d", "--help"}, "", false},
		{[]string{"--bogus", "status"}, "", false},
		{[]string{"-x", "status"}, "", false},
		{[]string{"--", "status"}, "", false},
	} {
		name, ok := commandName(c.args, root.PersistentFlags(), root.Flags())
		if name != c.name || ok != c.ok {
			t.Errorf("commandName(%q) = %q, %v; want %q, %v", c.args, name, ok, c.name, c.ok)
		}
	}
}

// Each entry builds the command cobra finds by the entry's name, and the
// table is the whole tree help lists.
func TestSubcommandTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range subcommands(&globals{}, BuildInfo{}) {
		c := s.make()
		if c.Name() != s.name {
			t.Errorf("entry %q builds %q", s.name, c.Name())
		}
		if len(c.Aliases) > 0 {
			t.Errorf("%s has aliases %q: commandName would not find it by them", s.name, c.Aliases)
		}
		if seen[s.name] {
			t.Errorf("%s twice", s.name)
		}
		seen[s.name] = true
	}
	full := newRootCmd(BuildInfo{}, []string{"--help"})
	if n := len(full.Commands()); n != len(seen) {
		t.Errorf("full tree has %d subcommands, the table %d", n, len(seen))
	}
}

// The tree built for a command holds that command alone; one built for no
// command holds none; help, and a name the table lacks, get them all.
func TestTreeForArgs(t *testing.T) {
	names := func(args ...string) string {
		var out []string
		for _, c := range newRootCmd(BuildInfo{}, args).Commands() {
			out = append(out, c.Name())
		}
		return strings.Join(out, " ")
	}
	if got := names("-C", "x", "status"); got != "status" {
		t.Errorf("status: %q", got)
	}
	if got := names("--version"); got != "" {
		t.Errorf("--version: %q", got)
	}
	all := len(subcommands(&globals{}, BuildInfo{}))
	for _, args := range [][]string{{"--help"}, {"help"}, {"stauts"}, {"completion", "bash"}} {
		if got := len(strings.Fields(names(args...))); got != all {
			t.Errorf("%q: %d subcommands, want %d", args, got, all)
		}
	}
}

// What users see is unchanged: root help lists every command, an unknown
// one is refused as such, a subcommand's help shows its own flags and the
// global ones.
func TestLazyTreeOutput(t *testing.T) {
	out := func(args ...string) (string, int) {
		var o, e bytes.Buffer
		code := run(args, BuildInfo{Version: "1.2.3"}, strings.NewReader(""), &o, &e)
		return o.String() + e.String(), code
	}
	if s, code := out("--help"); code != 0 || !strings.Contains(s, "status") || !strings.Contains(s, "patterns") {
		t.Errorf("--help (%d): %s", code, s)
	}
	if s, code := out("stauts"); code != ExitUsage || !strings.Contains(s, `unknown command "stauts"`) {
		t.Errorf("stauts (%d): %s", code, s)
	}
	if s, code := out("status", "--help"); code != 0 || !strings.Contains(s, "--directory") || !strings.Contains(s, "chorus status") {
		t.Errorf("status --help (%d): %s", code, s)
	}
	if s, code := out("--version"); code != 0 || s != "chorus 1.2.3\n" {
		t.Errorf("--version (%d): %q", code, s)
	}
}
