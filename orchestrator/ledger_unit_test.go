package orchestrator

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A long ledger is quoted in a handover within its bound, newest kept.
func TestLedgerDigestBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t-1.md")
	for i := 1; i <= 200; i++ {
		rec := fmt.Sprintf("\n## Iteration %d · script-t-1 · started 2026-01-01T00:00:00Z\n- 00:00:01Z note: finding number %d\n- ended 2026-01-01T00:00:02Z · tokens %d · files: f%d.go · result: not finished\n", i, i, i*10, i)
		if err := appendLedgerFile(path, "t-1", "title", rec); err != nil {
			t.Fatal(err)
		}
	}
	d := ledgerDigest(path)
	if len(d) > ledgerHandoverMax+100 {
		t.Fatalf("digest is %d bytes", len(d))
	}
	if !strings.Contains(d, "Iteration 200 note: finding number 200") || !strings.Contains(d, "Iteration 200: files f200.go") || strings.Contains(d, "finding number 1\n") {
		t.Fatalf("digest:\n%s", d)
	}
	if !strings.HasPrefix(d, "(") || !strings.Contains(d, "earlier entries left out") {
		t.Fatalf("digest does not say what it left out:\n%s", d[:200])
	}
	its, err := ReadLedger(path)
	if err != nil || len(its) != 200 || its[199].Tokens != 2000 || its[0].Files[0] != "f1.go" {
		t.Fatalf("read back: %d %v", len(its), err)
	}
}

// The same failure with other timings is the same failure; another exit
// code or message is not.
func TestFailureKey(t *testing.T) {
	r := func(code int, out string) []QualityResult {
		return []QualityResult{{Name: "test", Required: true, ExitCode: code, Output: out}}
	}
	a := failureKey(r(1, "FAIL pkg 0.013s at 0xc000123"))
	if b := failureKey(r(1, "FAIL pkg 0.982s at 0xc000999")); a != b {
		t.Error("timings made two failures differ")
	}
	if b := failureKey(r(2, "FAIL pkg 0.013s at 0xc000123")); a == b {
		t.Error("another exit code is the same failure")
	}
	if b := failureKey(r(1, "panic: nil map")); a == b {
		t.Error("another message is the same failure")
	}
}
