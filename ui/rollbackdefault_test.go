package ui

import (
	"testing"

	"github.com/chorus-dev/chorus/merge"
)

func TestDefaultCheckpointSkipsTip(t *testing.T) {
	for _, tc := range []struct {
		cps  []merge.Checkpoint
		want int
	}{
		{nil, 0},
		{[]merge.Checkpoint{{Ref: "a"}}, 0},
		{[]merge.Checkpoint{{Ref: "a", AtTip: true}, {Ref: "b", AtTip: true}, {Ref: "c"}}, 2},
		{[]merge.Checkpoint{{Ref: "a", AtTip: true}}, 0},
	} {
		if got := defaultCheckpoint(tc.cps); got != tc.want {
			t.Errorf("defaultCheckpoint(%+v) = %d, want %d", tc.cps, got, tc.want)
		}
	}
}
