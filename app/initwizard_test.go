package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/taskrules"
	"github.com/chorus-dev/chorus/ui"
)

// The init wizard driven by keys on a simulation screen, end to end to
// the files it writes: the prerequisites, the detected project changed
// (prefix, agents; a bad value refused in place), the detected quality
// commands toggled, removed, edited and added to, the rule limits changed
// (a bad value refused), Esc back a step and forward again, and the
// confirmation writes config.json and task-rules.md as answered.
func TestInitWizard(t *testing.T) {
	dir := gitRepo(t)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/widget\n"), 0o644)
	var stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wizard := make(chan bool, 1)
	r := startSim(t, func(sc tcell.Screen) error {
		ran, err := runInit(ctx, &globals{dir: dir}, &initOptions{wizard: func(o *ui.InitOptions) { o.Screen = sc }}, strings.NewReader(""), &stderr)
		wizard <- ran
		return err
	})
	enter := func(line string) {
		r.typeText(line)
		r.sc.InjectKey(tcell.KeyEnter, 0, 0)
	}
	txt := r.wait("Step 1/4")
	for _, want := range []string{"CHORUS INIT", "git repository at " + dir, "git: git ", "target branch: main", "All prerequisites met"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("prerequisites lack %q:\n%s", want, txt)
		}
	}
	enter("")
	txt = r.wait("Step 2/4")
	for _, want := range []string{"go.mod found → go", "Project name:         [widget]", "Task ID prefix:       [wid-]", "Agents at once (max): [3]"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("project step lacks %q:\n%s", want, txt)
		}
	}
	enter("prefix WG-")
	r.wait("[wg-]")
	enter("agents 40")
	r.wait("agents.maxParallel")
	enter("agents 5")
	r.wait("[5]")
	r.sc.InjectKey(tcell.KeyEsc, 0, 0)
	r.wait("Step 1/4")
	enter("")
	r.wait("[wg-]")
	enter("")
	txt = r.wait("Step 3/4")
	for _, want := range []string{"1. [*] build        go build ./...", "2. [ ] vet          go vet ./...", "3. [*] test         go test ./..."} {
		if !strings.Contains(txt, want) {
			t.Fatalf("quality step lacks %q:\n%s", want, txt)
		}
	}
	enter("toggle 2")
	r.wait("2. [*] vet")
	enter("remove 1")
	r.wait("2. [*] test")
	enter("edit 2 go test -race ./...")
	r.wait("go test -race ./...")
	enter("remove 7")
	r.wait(`"7" is not a command number`)
	enter("add lint staticcheck ./...")
	r.wait("3. [*] lint")
	enter("toggle 3")
	r.wait("3. [ ] lint")
	enter("done")
	txt = r.wait("Step 4/4")
	if !strings.Contains(txt, "max_acceptance_criteria    [10]") || !strings.Contains(txt, "max_description_length     [500]") {
		t.Fatalf("rules step:\n%s", txt)
	}
	enter("max_acceptance_criteria 6")
	r.wait("[6]")
	enter("max_description_length lots")
	r.wait(`"lots" is not valid`)
	enter("max_description_length 800")
	r.wait("[800]")
	enter("")
	txt = r.wait("Confirm")
	for _, want := range []string{"widget (go), task ids wg-…, up to 5 agents", "1. vet: go vet ./... (required)", "3. lint: staticcheck ./... (optional)", "max_description_length = 800"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("confirmation lacks %q:\n%s", want, txt)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".chorus")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf(".chorus/ exists before the confirmation: %v", err)
	}
	enter("")
	select {
	case err := <-r.done:
		if err != nil || !<-wizard {
			t.Fatalf("init: %v\n%s", err, stderr.String())
		}
	case <-time.After(simLimit):
		t.Fatal("init did not end")
	}
	cfg, err := config.Load(filepath.Join(dir, ".chorus", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []config.QualityCommand{
		{Name: "vet", Command: "go vet ./...", Required: true, Order: 1},
		{Name: "test", Command: "go test -race ./...", Required: true, Order: 2},
		{Name: "lint", Command: "staticcheck ./...", Required: false, Order: 3},
	}
	if cfg.Project.TaskIDPrefix != "wg" || cfg.Project.Name != "widget" || cfg.Agents.MaxParallel != 5 || !reflect.DeepEqual(cfg.QualityCommands, want) {
		t.Fatalf("config: %+v %+v", cfg.Project, cfg.QualityCommands)
	}
	if cfg.Merge.TargetBranch != "main" {
		t.Fatalf("the wizard recorded target %q, want main", cfg.Merge.TargetBranch)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".chorus", "task-rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := taskrules.Parse("task-rules.md", string(b))
	if err != nil || rules.MaxAcceptanceCriteria != 6 || rules.MaxDescriptionLength != 800 {
		t.Fatalf("rules %+v %v", rules, err)
	}
	if !strings.Contains(stderr.String(), "created .chorus/config.json") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

// Ctrl-C leaves the wizard without writing anything.
func TestInitWizardCancel(t *testing.T) {
	dir := gitRepo(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := startSim(t, func(sc tcell.Screen) error {
		_, err := runInit(ctx, &globals{dir: dir}, &initOptions{wizard: func(o *ui.InitOptions) { o.Screen = sc }}, strings.NewReader(""), &bytes.Buffer{})
		return err
	})
	r.wait("Step 1/4")
	r.sc.InjectKey(tcell.KeyEnter, 0, 0)
	r.wait("Step 2/4")
	r.sc.InjectKey(tcell.KeyCtrlC, 0, 0)
	select {
	case err := <-r.done:
		var ee *exitError
		if !errors.Is(err, ui.ErrInitCancelled) || !errors.As(err, &ee) || ee.code != ExitFailure {
			t.Fatalf("cancel: %v", err)
		}
	case <-time.After(simLimit):
		t.Fatal("init did not end")
	}
	if _, err := os.Stat(filepath.Join(dir, ".chorus")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf(".chorus/ after a cancelled init: %v", err)
	}
}

// "Type to ask questions": a question at the prompt is answered from the
// setup in hand, at any step, and changes nothing; the step's commands
// still work after it.
func TestInitWizardAnswersQuestions(t *testing.T) {
	dir := gitRepo(t)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/widget\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := startSim(t, func(sc tcell.Screen) error {
		_, err := runInit(ctx, &globals{dir: dir}, &initOptions{wizard: func(o *ui.InitOptions) { o.Screen = sc }}, strings.NewReader(""), &bytes.Buffer{})
		return err
	})
	enter := func(line string) {
		r.typeText(line)
		r.sc.InjectKey(tcell.KeyEnter, 0, 0)
	}
	r.wait("type to ask questions or press Enter to continue")
	enter("what is beads?")
	if txt := r.wait("Tasks live in Beads"); !strings.Contains(txt, "Step 1/4") {
		t.Fatalf("a question moved the wizard on:\n%s", txt)
	}
	enter("")
	r.wait("Step 2/4")
	enter("what does the prefix do")
	if txt := r.wait("Task ids start with the prefix: wid-3ae"); !strings.Contains(txt, "[wid-]") {
		t.Fatalf("after the question:\n%s", txt)
	}
	enter("how do I make coffee?")
	r.wait("I can answer about")
	enter("prefix WG")
	r.wait("[wg-]")
	r.sc.InjectKey(tcell.KeyCtrlC, 0, 0)
	select {
	case err := <-r.done:
		if !errors.Is(err, ui.ErrInitCancelled) {
			t.Fatalf("cancel: %v", err)
		}
	case <-time.After(simLimit):
		t.Fatal("init did not end")
	}
}
