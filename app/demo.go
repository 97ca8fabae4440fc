package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

type demoOptions struct {
	dir      string
	headless bool
	fast     bool
	pace     time.Duration
}

// demoPace is the scripted agents' pause between steps: a task takes a
// few seconds, as if an agent read, thought and typed.
const demoPace = 1200 * time.Millisecond

func newDemoCmd(g *globals) *cobra.Command {
	o := &demoOptions{}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Watch Chorus work: a throwaway project, eight tasks, scripted agents, real git",
		Long: `Creates a small shell project with tests in a new git repository, adds eight
tasks with priorities and dependencies, and runs autopilot with a built-in
scripted agent that edits, commits and signals like a real one. One task fails
its tests first and is fixed on the next iteration; two tasks change the same
line and their merge conflict is resolved by an agent. Needs no API key, no bd
and no agent CLI. --pace slows it down to follow each step (the resolver,
the failed check and its retry are named on their task's row). q quits at
any time; the repository is kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), o, cmd.InOrStdin(), cmd.ErrOrStderr())
		},
	}
	c.Flags().StringVar(&o.dir, "dir", "", "create the demo repository here (default: a new temporary directory)")
	c.Flags().BoolVar(&o.headless, "headless", false, "no full-screen UI: print one line per event")
	c.Flags().BoolVar(&o.fast, "fast", false, "no pauses in the scripted agents (for tests)")
	c.Flags().DurationVar(&o.pace, "pace", demoPace, "the scripted agents' pause between steps; e.g. 4s to follow every step")
	return c
}

func runDemo(ctx context.Context, o *demoOptions, stdin io.Reader, out io.Writer) error {
	dir := o.dir
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "chorus-demo-")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return withCode(ExitFailure, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		return withCode(ExitUsage, fmt.Errorf("%s is not empty; give --dir a new or empty directory", dir))
	}
	fmt.Fprintf(out, "Demo repository: %s\n", dir)
	pace := o.pace
	if o.fast {
		pace = 0
	}
	if pace < 0 {
		return withCode(ExitUsage, fmt.Errorf("--pace %s: give a duration of 0 or more, e.g. 4s", o.pace))
	}
	if err := writeDemoProject(ctx, dir, pace); err != nil {
		return withCode(ExitFailure, fmt.Errorf("setting up the demo: %w (the repository is in %s)", err, dir))
	}
	g := &globals{dir: dir}
	p, err := g.loadProject(ctx, out, true)
	if err != nil {
		return err
	}
	s, err := p.store(ctx)
	if err != nil {
		return err
	}
	// The demo's engine lives and dies with it.
	ro := &runOptions{headless: o.headless || !isTTY(stdin), autopilot: true, inProcess: true}
	runErr := runImplementation(ctx, p, s, ro, 0, out)
	fmt.Fprintf(out, "\nThe demo repository is %s\n  git -C %s log --oneline --graph    # what landed on main\n  %s -C %s task list    # every task\n", dir, dir, selfCommand(), dir)
	return runErr
}

// demoFiles is the project the agents work on: a tiny shell tool with tests.
var demoFiles = map[string]string{
	"greet.sh": `#!/bin/sh
# greet.sh NAME: print a greeting.
name=${1:-world}
echo "Hello, $name!"
`,
	"tests/run.sh": `#!/bin/sh
# Runs every tests/test_*.sh; fails if any fails, naming the failures last.
cd "$(dirname "$0")/.." || exit 1
failed=""
for t in tests/test_*.sh; do
  [ -f "$t" ] || continue
  if out=$(sh "$t" 2>&1); then echo "ok   $t"; else failed="$failed$t: $out
"; fi
done
[ -z "$failed" ] && exit 0
printf "FAIL %s" "$failed"
exit 1
`,
	"tests/test_greet.sh": `#!/bin/sh
out=$(sh greet.sh Ada)
case "$out" in Hello,\ Ada*) exit 0 ;; esac
echo "greet.sh Ada printed: $out"; exit 1
`,
	"README.md": "# greet\n\nA tiny greeting tool.\n",
}

// demoTask is one task and what the scripted agent does for it.
type demoTask struct {
	key, title, desc string
	prio             int
	deps             []string
	script           string // ops for a normal run
	first            string // ops for iteration 1, when it differs
	resolve          string // ops when asked to resolve a merge conflict
}

const mergedGreet = `#!/bin/sh
# greet.sh [-f] NAME: print a greeting (-f: in French).
lang=en
[ "$1" = -f ] && { lang=fr; shift; }
name=${1:-world}
if [ "$lang" = fr ]; then echo "Bonjour, $name."; else echo "Hello, $name."; fi
`

var demoTasks = []demoTask{
	{key: "count", title: "Add a word-count tool", prio: 1, desc: "wc.sh counts the words of its arguments.",
		script: `write wc.sh "#!/bin/sh\n# wc.sh WORDS...: count words.\necho $#\n"
write tests/test_wc.sh "#!/bin/sh\n[ \"$(sh wc.sh a b c)\" = 3 ] || { echo wc.sh counts wrong; exit 1; }\n"
commit "feat(wc): word count [{{id}}]"`},
	{key: "shout", title: "Add a shouting tool", prio: 1, desc: "shout.sh prints its argument in capitals.",
		script: `write shout.sh "#!/bin/sh\necho \"$*\" | tr a-z A-Z\n"
write tests/test_shout.sh "#!/bin/sh\n[ \"$(sh shout.sh hi)\" = HI ] || exit 1\n"
commit "feat(shout): capitals [{{id}}]"`},
	{key: "bye", title: "Add a farewell command", prio: 2, desc: "bye.sh NAME prints Goodbye, NAME!",
		first: `write bye.sh "#!/bin/sh\necho \"Bye $1\"\n"
write tests/test_bye.sh "#!/bin/sh\n[ \"$(sh bye.sh Ada)\" = \"Goodbye, Ada!\" ] || { echo \"bye.sh Ada printed: $(sh bye.sh Ada)\"; exit 1; }\n"
commit "feat(bye): farewell [{{id}}]"`,
		script: `print "The test says the farewell text is wrong; fixing it."
write bye.sh "#!/bin/sh\necho \"Goodbye, $1!\"\n"
commit "fix(bye): full farewell text [{{id}}]"`},
	{key: "period", title: "End the greeting with a full stop", prio: 2, desc: "greet.sh prints Hello, NAME. instead of an exclamation mark.",
		script: `write greet.sh "#!/bin/sh\n# greet.sh NAME: print a greeting.\nname=${1:-world}\necho \"Hello, $name.\"\n"
commit "style(greet): calmer greeting [{{id}}]"`,
		resolve: "resolve"},
	{key: "french", title: "Greet in French with -f", prio: 2, desc: "greet.sh -f NAME prints Bonjour, NAME.",
		script: `write greet.sh "#!/bin/sh\n# greet.sh [-f] NAME: print a greeting (-f: in French).\nlang=en\n[ \"$1\" = -f ] && { lang=fr; shift; }\nname=${1:-world}\nif [ \"$lang\" = fr ]; then echo \"Bonjour, $name!\"; else echo \"Hello, $name!\"; fi\n"
write tests/test_french.sh "#!/bin/sh\ncase \"$(sh greet.sh -f Ada)\" in Bonjour,\\ Ada*) exit 0;; esac; exit 1\n"
commit "feat(greet): French [{{id}}]"`,
		resolve: "resolve"},
	{key: "docs", title: "Document the tools", prio: 3, deps: []string{"count", "shout"}, desc: "Describe every tool in README.md.",
		script: `append README.md "\n## Tools\n\n- greet.sh NAME\n- wc.sh WORDS...\n- shout.sh TEXT\n"
commit "docs: list the tools [{{id}}]"`},
	{key: "version", title: "Add a VERSION file", prio: 3, desc: "VERSION holds 0.1.0.",
		script: `write VERSION "0.1.0\n"
commit "chore: version file [{{id}}]"`},
	{key: "changelog", title: "Start a changelog", prio: 4, deps: []string{"docs", "version"}, desc: "CHANGELOG.md lists the first release.",
		script: `write CHANGELOG.md "# Changelog\n\n## 0.1.0\n\n- greet, wc, shout and bye\n"
commit "docs: changelog [{{id}}]"`},
}

func writeDemoProject(ctx context.Context, dir string, pace time.Duration) error {
	git := func(args ...string) error {
		_, err := gitx.Git(ctx, dir, args...)
		return err
	}
	if err := git("init", "-q", "-b", "main"); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"user.name", "Chorus Demo"}, {"user.email", "demo@chorus.invalid"}} {
		if err := git("config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	for name, body := range demoFiles {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := config.Default()
	cfg.Project = config.Project{Name: "greet", Type: "shell", TaskIDPrefix: "demo"}
	cfg.Mode = config.ModeAutopilot
	cfg.QualityCommands = []config.QualityCommand{{Name: "tests", Command: "sh tests/run.sh", Required: true, Order: 1}}
	cfg.Agents.Available["demo"] = config.AgentProfile{Command: exe, Args: []string{"scripted-agent", "--script", ".chorus/demo-agent.script"}, Prompt: config.PromptArg}
	cfg.Agents.Default = "demo"
	cfg.Agents.MaxParallel = 3
	cfg.Completion.StopGraceSeconds = 2
	if _, err := config.Install(dir, cfg); err != nil {
		return err
	}
	st, err := beads.Open(ctx, beads.OpenOptions{RepoDir: dir, Prefix: "demo"})
	if err != nil {
		return err
	}
	ids := map[string]string{}
	for _, t := range demoTasks {
		var deps []string
		for _, d := range t.deps {
			deps = append(deps, ids[d])
		}
		created, err := st.Create(ctx, t.title, beads.CreateOptions{Priority: t.prio, PrioritySet: true, Description: t.desc,
			Acceptance: "sh tests/run.sh passes", Deps: deps})
		if err != nil {
			return err
		}
		ids[t.key] = created.ID
	}
	if err := os.WriteFile(filepath.Join(dir, ".chorus", "demo-agent.script"), []byte(demoScript(ids, pace)), 0o644); err != nil {
		return err
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	return git("commit", "-q", "-m", "greet: first version")
}

// demoScript writes the scripted agent's behaviour for every task.
func demoScript(ids map[string]string, pace time.Duration) string {
	pause := ""
	if pace > 0 {
		pause = fmt.Sprintf("sleep %dms\n", pace.Milliseconds())
	}
	var b strings.Builder
	b.WriteString("# What the demo's scripted agent does, task by task.\n")
	for _, t := range demoTasks {
		id := ids[t.key]
		sub := func(ops string) string { return strings.ReplaceAll(ops, "{{id}}", id) }
		if t.resolve != "" {
			// Both greet.sh changes kept: the resolver writes the merged file.
			fmt.Fprintf(&b, "@ task=%s prompt~Merge\n", id)
			b.WriteString("print \"Reading both sides of the conflict in greet.sh…\"\n" + pause)
			fmt.Fprintf(&b, "write greet.sh %s\n", strconv.Quote(mergedGreet))
			b.WriteString("run \"git add -A && git commit -q --no-edit\"\n")
			b.WriteString("signal RESOLVED \"kept the French option and the full stop\"\n")
		}
		if t.first != "" {
			fmt.Fprintf(&b, "@ task=%s iteration=1\n", id)
			b.WriteString("print " + strconv.Quote("Working on "+t.title) + "\n" + pause)
			b.WriteString(sub(t.first) + "\n" + pause + "signal COMPLETE\n")
		}
		fmt.Fprintf(&b, "@ task=%s\n", id)
		b.WriteString("print " + strconv.Quote("Working on "+t.title) + "\n" + pause)
		b.WriteString("print \"Reading the project: greet.sh, tests/run.sh, README.md\"\nrun \"ls\"\n" + pause)
		b.WriteString("signal PROGRESS 50\n")
		b.WriteString(sub(t.script) + "\n" + pause)
		b.WriteString("run \"sh tests/run.sh\"\nsignal COMPLETE\n")
	}
	return b.String()
}

// selfCommand is how the person runs this chorus from where they are: the
// go command's temporary build (go run) is "go run ./cmd/chorus"; one
// found first on PATH is "chorus"; anything else its full path.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "chorus"
	}
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return "go run ./cmd/chorus"
	}
	if p, err := exec.LookPath("chorus"); err == nil {
		if a, errA := os.Stat(p); errA == nil {
			if b, errB := os.Stat(exe); errB == nil && os.SameFile(a, b) {
				return "chorus"
			}
		}
	}
	return exe
}
