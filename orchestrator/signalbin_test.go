package orchestrator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-dev/chorus/chorusdir"
)

// chorus-signal of the same build beside the chorus executable is what
// agents find first as `chorus`; one of another build, or none, is not.
func TestFastSignalDir(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	exe := filepath.Join(bin, "chorus")
	d := chorusdir.At(t.TempDir())
	if got := fastSignalDir(d, exe); got != "" {
		t.Fatalf("no chorus-signal installed, yet agents get %q", got)
	}
	// Another build (not a Go binary at all) beside another chorus.
	other := filepath.Join(t.TempDir(), "chorus")
	if err := os.WriteFile(filepath.Join(filepath.Dir(other), "chorus-signal"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := fastSignalDir(d, other); got != "" {
		t.Fatalf("a chorus-signal of another build is used: %q", got)
	}
	// This very build, as chorus-signal.
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	fast := filepath.Join(bin, "chorus-signal")
	if err := os.WriteFile(fast, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // made, then found as it is, then made again whole
		if i == 2 {
			// What a stop while writing it left: it empty, no link yet.
			if err := os.WriteFile(filepath.Join(d.Bin(), ".gitignore"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(d.Bin(), "chorus")); err != nil {
				t.Fatal(err)
			}
		}
		got := fastSignalDir(d, exe)
		if got != d.Bin() {
			t.Fatalf("agents' folder %q, want %q", got, d.Bin())
		}
		if link, err := os.Readlink(filepath.Join(got, "chorus")); err != nil || link != fast {
			t.Fatalf("chorus links to %q (%v), want %q", link, err, fast)
		}
		if b, err := os.ReadFile(filepath.Join(got, ".gitignore")); err != nil || string(b) != "*\n" {
			t.Fatalf("the folder does not keep itself out of git: %q %v", b, err)
		}
	}
}
