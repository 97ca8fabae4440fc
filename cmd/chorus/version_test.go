//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's install line, `go install ./cmd/chorus` in a git checkout,
// gives a binary whose --version names the commit it was built from, and
// says "+dirty" when the checkout had uncommitted changes. The checkout is
// a fresh repository holding this tree's files, so the test sees the code
// as it is now, committed or not.
func TestVersionNamesTheCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	src := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = src
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	head := git("rev-parse", "HEAD")

	bin := t.TempDir()
	version := func() string {
		t.Helper()
		install := exec.Command("go", "install", "./cmd/chorus")
		install.Dir = src
		// GOFLAGS as a user has it by default: a machine-wide
		// -buildvcs=false must not hide what this test is about.
		install.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-buildvcs=true")
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("go install ./cmd/chorus: %v\n%s", err, out)
		}
		out, err := exec.Command(filepath.Join(bin, "chorus"), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("chorus --version: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}

	clean := version()
	t.Logf("clean checkout: %s", clean)
	if !strings.Contains(clean, "commit "+head[:12]+",") || strings.Contains(clean, "dirty") {
		t.Errorf("--version in a clean checkout at %s = %q, want the commit named and no +dirty", head[:12], clean)
	}
	if !strings.Contains(clean, head[:12]) || !strings.HasPrefix(clean, "chorus v0.0.0-") {
		t.Errorf("--version = %q, want the pseudo-version the go command derives from the commit", clean)
	}

	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirty := version()
	t.Logf("dirty checkout: %s", dirty)
	if !strings.Contains(dirty, "commit "+head[:12]+"+dirty") {
		t.Errorf("--version with uncommitted changes = %q, want commit %s+dirty", dirty, head[:12])
	}
}
