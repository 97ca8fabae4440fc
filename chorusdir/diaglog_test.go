package chorusdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Records go to chorus.log until the next would pass the limit; then the
// file moves to .1 (and .1 to .2), the oldest beyond keep is dropped, and
// no record is ever split between files.
func TestRotatingFileRotatesBySizeAndKeepsTwo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chorus.log")
	r, err := OpenRotating(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := range 20 {
		rec := fmt.Sprintf("record %02d %s\n", i, strings.Repeat("x", 20)) // 31 bytes: three fit in 100
		all = append(all, rec)
		if n, err := r.Write([]byte(rec)); err != nil || n != len(rec) {
			t.Fatalf("write %d: %d %v", i, n, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("%s.3 exists: only two old files are kept", path)
	}
	var kept string
	for _, p := range []string{path + ".2", path + ".1", path} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 100 {
			t.Errorf("%s has %d bytes, over the 100-byte limit", filepath.Base(p), len(b))
		}
		if len(b) == 0 || len(b)%31 != 0 {
			t.Errorf("%s holds %d bytes: not whole records", filepath.Base(p), len(b))
		}
		kept += string(b)
	}
	// 20 records, three per file: the current file has 20 mod 3 = 2, the
	// two old ones 3 each, so the last 8 records survive, in order.
	if want := strings.Join(all[12:], ""); kept != want {
		t.Errorf("kept:\n%s\nwant the last 8 records:\n%s", kept, want)
	}
}

// A reopened log counts what is already in it, so a restart does not let
// the file grow past the limit.
func TestRotatingFileCountsExistingSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chorus.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("a", 80)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRotating(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write([]byte(strings.Repeat("b", 30) + "\n")); err != nil {
		t.Fatal(err)
	}
	r.Close()
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(old), "aaa") || !strings.HasPrefix(string(cur), "bbb") {
		t.Errorf("after reopen: .1 = %q, current = %q; want the old content rotated away", old, cur)
	}
}

func TestDiagLogLevelFromEnv(t *testing.T) {
	d := At(t.TempDir())
	t.Setenv(LogLevelEnv, "debug")
	log, c, err := d.OpenDiagLog()
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("fine detail", "agent", "a1")
	log.Info("session started")
	c.Close()
	b, err := os.ReadFile(d.DiagLog())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `level=DEBUG msg="fine detail" agent=a1`) || !strings.Contains(string(b), "session started") {
		t.Errorf("debug log:\n%s", b)
	}

	t.Setenv(LogLevelEnv, "")
	log, c, err = d.OpenDiagLog()
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden detail")
	log.Warn("warned")
	c.Close()
	b, _ = os.ReadFile(d.DiagLog())
	if strings.Contains(string(b), "hidden detail") || !strings.Contains(string(b), "level=WARN msg=warned") {
		t.Errorf("at the default level (info):\n%s", b)
	}

	t.Setenv(LogLevelEnv, "verbose")
	if _, _, err := d.OpenDiagLog(); err == nil || !strings.Contains(err.Error(), "debug, info, warn or error") {
		t.Errorf("bad level: %v", err)
	}
}
