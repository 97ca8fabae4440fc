package testkit

import (
	"os"
	"slices"
	"testing"
	"time"
)

// ReportSpread reports ratios taken pair by pair as unit-median, unit-min
// and unit-max: a benchmark's figure with its spread, as the notes quote it.
func ReportSpread(b *testing.B, rs []float64, unit string) {
	if len(rs) == 0 {
		return
	}
	rs = slices.Clone(rs)
	slices.Sort(rs)
	b.ReportMetric(rs[len(rs)/2], unit+"-median")
	b.ReportMetric(rs[0], unit+"-min")
	b.ReportMetric(rs[len(rs)-1], unit+"-max")
}

// CPU is the user and system time an ended process took.
func CPU(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }
