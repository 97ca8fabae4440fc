package orchestrator

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// readBuildInfo gives debug/buildinfo's answer for the executables chorus
// reads it from (and this test binary), also behind headers that are not
// one; a file without build information is refused.
func TestReadBuildInfo(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(testkit.Chorus(t))
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	// Headers at aligned offsets ahead of the real one: flags without
	// inline strings, then a version string that is not one.
	decoys := filepath.Join(t.TempDir(), "decoys")
	var pre []byte
	pre = append(pre, buildInfoMagic...)
	pre = append(pre, 8, 0)
	pre = append(pre, make([]byte, 16)...)
	pre = append(pre, buildInfoMagic...)
	pre = append(pre, 8, flagsVersionInl)
	pre = append(pre, make([]byte, 16)...)
	pre = append(pre, 3, 'x', 'y', 'z')
	pre = append(pre, make([]byte, 12)...)
	if len(pre)%16 != 0 {
		t.Fatalf("decoys take %d bytes: the real header would move off its alignment", len(pre))
	}
	if err := os.WriteFile(decoys, append(pre, data...), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, like string }{
		{self, self}, {decoys, self},
		{filepath.Join(dir, "chorus"), ""}, {filepath.Join(dir, "chorus-signal"), ""}, {filepath.Join(dir, "chorus-agent-host"), ""},
	} {
		if c.like == "" {
			c.like = c.path
		}
		want, err := buildinfo.ReadFile(c.like)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readBuildInfo(c.path)
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if got.String() != want.String() || got.GoVersion != want.GoVersion {
			t.Errorf("%s:\n%s\nwant\n%s", c.path, got, want)
		}
	}
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, append([]byte("#!/bin/sh\n"), pre...), 0o755); err != nil {
		t.Fatal(err)
	}
	if bi, err := readBuildInfo(script); err == nil {
		t.Errorf("a script has build information: %v", bi)
	}
}
