// Package layers holds the test that keeps docs/ARCHITECTURE.md's package
// table true: every package of the module is listed, and imports point down
// that list only.
package layers

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// imp is one import of a module package, where it was written.
type imp struct {
	path string // import path
	pos  string // file:line
}

// pkg is what the parser found in one directory. Files of every build
// constraint count, so a macOS-only file cannot import upward unseen on
// Linux.
type pkg struct {
	rel   string // path under the module root; "." for the root
	code  []imp  // imports of non-test files and of in-package tests
	xtest []imp  // imports of external (package x_test) tests
}

func TestImportsPointDownTheTable(t *testing.T) {
	root, module := moduleRoot(t)
	table := readTable(t, filepath.Join(root, "docs", "ARCHITECTURE.md"))
	pkgs := parseTree(t, root, module)

	level := map[string]int{}
	for i, name := range table {
		if _, dup := level[name]; dup {
			t.Errorf("docs/ARCHITECTURE.md lists %s twice in the package table", name)
		}
		level[name] = i
	}
	var inTree []string
	for rel := range pkgs {
		inTree = append(inTree, rel)
		if _, ok := level[rel]; !ok {
			t.Errorf("package %s is not in docs/ARCHITECTURE.md's package table: add a line saying what it owns, placed above every package it imports", rel)
		}
	}
	for _, name := range table {
		if pkgs[name] == nil {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which is not a package in the tree: remove or rename its line", name)
		}
	}
	sort.Strings(inTree)

	for _, rel := range inTree {
		p := pkgs[rel]
		from, ok := level[rel]
		if !ok {
			continue
		}
		for _, im := range p.code {
			to, ok := level[im.path]
			if !ok {
				continue // reported above when it is a package of the tree
			}
			if to <= from {
				t.Errorf("%s: %s imports %s, which docs/ARCHITECTURE.md lists %s it: imports must point down the package table",
					im.pos, rel, im.path, map[bool]string{true: "as", false: "above"}[to == from])
			}
		}
	}
}

// The engine, merge, the task store and config must not reach the UI or
// its toolkit, directly or through any dependency.
var headless = []string{"orchestrator", "worktree", "merge", "merge/driver", "beads", "beads/storetest", "config"}

func uiPackage(path, module string) bool {
	return path == module+"/ui" || strings.HasPrefix(path, module+"/ui/") ||
		strings.HasPrefix(path, "github.com/rivo/tview") || strings.HasPrefix(path, "github.com/gdamore/tcell")
}

func TestEngineMergeStoreConfigNeverImportUI(t *testing.T) {
	root, module := moduleRoot(t)
	pkgs := parseTree(t, root, module)
	// Direct imports, in every file including tests, with where they are.
	for _, rel := range headless {
		p := pkgs[rel]
		if p == nil {
			t.Errorf("package %s does not exist: update the list in this test", rel)
			continue
		}
		for _, im := range slices.Concat(p.code, p.xtest) {
			if uiPackage(im.path, module) || uiPackage(module+"/"+im.path, module) {
				t.Errorf("%s: %s imports %s: the engine, merge, task store and config never import the UI or tview/tcell", im.pos, rel, im.path)
			}
		}
	}
	// Everything they link, as the go command resolves it for this
	// platform, third-party packages included. -e: an import cycle (which
	// an upward import makes) is reported above, not a reason to stop.
	var args []string
	for _, rel := range headless {
		args = append(args, module+"/"+rel)
	}
	cmd := exec.Command("go", append([]string{"list", "-e", "-f", "{{.ImportPath}} {{join .Deps \" \"}}"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderrOf(err))
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		seen := map[string]bool{}
		for _, dep := range f[1:] {
			if !uiPackage(dep, module) {
				continue
			}
			top := dep
			for _, r := range []string{module + "/ui", "github.com/rivo/tview", "github.com/gdamore/tcell/v2"} {
				if dep == r || strings.HasPrefix(dep, r+"/") {
					top = r
				}
			}
			if !seen[top] {
				seen[top] = true
				t.Errorf("%s depends on %s (go list): the engine, merge, task store and config never import the UI or tview/tcell",
					strings.TrimPrefix(f[0], module+"/"), top)
			}
		}
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// moduleRoot walks up to go.mod and returns its directory and module path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for line := range strings.SplitSeq(string(b), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s/go.mod has no module line", dir)
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

var firstCode = regexp.MustCompile("`([^`]+)`")

// readTable returns the packages of the table under "## Packages", top to
// bottom. Each row's first cell names one package in backquotes: a path
// under the module root, or `.` for the root.
func readTable(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, "## Packages")
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(line, "|")
			if len(cells) < 3 {
				continue
			}
			first := strings.TrimSpace(cells[1])
			if first == "package" || strings.Trim(first, "-: ") == "" {
				continue // header and separator rows
			}
			m := firstCode.FindStringSubmatch(first)
			if m == nil {
				t.Fatalf("%s: package table row %q names no package in backquotes", path, line)
			}
			names = append(names, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("%s: no package table under a \"## Packages\" heading", path)
	}
	return names
}

// parseTree parses the imports of every Go file under root, skipping what
// the go command skips (testdata, vendor, names starting with . or _).
func parseTree(t *testing.T, root, module string) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkg{rel: rel}
			pkgs[rel] = p
		}
		xtest := strings.HasSuffix(name, "_test.go") && strings.HasSuffix(f.Name.Name, "_test")
		for _, s := range f.Imports {
			ip, _ := strconv.Unquote(s.Path.Value)
			var target string
			switch {
			case ip == module:
				target = "."
			case strings.HasPrefix(ip, module+"/"):
				target = strings.TrimPrefix(ip, module+"/")
			case strings.HasPrefix(ip, "github.com/rivo/tview"), strings.HasPrefix(ip, "github.com/gdamore/tcell"):
				target = ip // kept for the UI rule
			default:
				continue
			}
			relFile, _ := filepath.Rel(root, path)
			im := imp{path: target, pos: fmt.Sprintf("%s:%d", filepath.ToSlash(relFile), fset.Position(s.Pos()).Line)}
			if xtest {
				p.xtest = append(p.xtest, im)
			} else {
				p.code = append(p.code, im)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// chorusDeps lists the packages cmd/chorus links for goos.
func chorusDeps(t *testing.T, goos string) string {
	t.Helper()
	root, module := moduleRoot(t)
	cmd := exec.Command("go", "list", "-deps", module+"/cmd/chorus")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderrOf(err))
	}
	return string(out)
}

// The chorus executable links no Kubernetes package: Go initialises every
// linked package at each start (status, signal, attach): client-go's
// cost each start 2.8 ms of CPU, and it doubled the binary. The Kubernetes
// runner is chorus-kube's, run by agent/host/kubeproc.
func TestChorusLinksNoKubernetes(t *testing.T) {
	_, module := moduleRoot(t)
	for _, goos := range []string{"linux", "darwin"} {
		out := chorusDeps(t, goos)
		var k8s []string
		for dep := range strings.Lines(out) {
			if dep = strings.TrimSpace(dep); strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, module+"/agent/host/kube") && dep != module+"/agent/host/kubeproc" {
				k8s = append(k8s, dep)
			}
		}
		if len(k8s) > 0 {
			t.Errorf("GOOS=%s: cmd/chorus links %d Kubernetes packages (%s…): reach the cluster through agent/host/kubeproc (chorus-kube), not agent/host/kube",
				goos, len(k8s), strings.Join(k8s[:min(len(k8s), 3)], ", "))
		}
	}
}

// Nor packages whose init was a measurable part of every start while
// little or nothing of theirs ran: Go initialises every linked package.
func TestChorusLinksNoStartCost(t *testing.T) {
	why := map[string]string{
		"github.com/charmbracelet/":     "x/ansi's width tables and parser table (agent/term keeps a copy of the parser, vtparser.go)",
		"github.com/mattn/go-runewidth": "its width tables",
		"debug/buildinfo":               "debug/elf, macho, pe, dwarf and zstd with it (orchestrator/buildinfo.go reads the build)",
	}
	for _, goos := range []string{"linux", "darwin"} {
		out := chorusDeps(t, goos)
		for dep := range strings.Lines(out) {
			dep = strings.TrimSpace(dep)
			for prefix, reason := range why {
				if dep == prefix || strings.HasPrefix(dep, prefix) && strings.HasSuffix(prefix, "/") {
					t.Errorf("GOOS=%s: cmd/chorus links %s: %s", goos, dep, reason)
				}
			}
		}
	}
}
