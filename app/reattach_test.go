package app

import (
	"testing"

	"github.com/chorus-dev/chorus/chorusdir"
)

func TestDecideLoss(t *testing.T) {
	const old = 100
	for _, c := range []struct {
		name  string
		lock  chorusdir.LockState
		alive bool
		want  afterLoss
	}{
		{"stopped as asked: the lock file removed", chorusdir.LockState{}, false, lossExit},
		{"killed: its lock file left by a dead process", chorusdir.LockState{Present: true, Holder: chorusdir.Holder{PID: old}}, false, lossRestart},
		{"another engine holds it already", chorusdir.LockState{Present: true, Held: true, Holder: chorusdir.Holder{PID: 200}}, false, lossAttach},
		{"still alive past the wait", chorusdir.LockState{Present: true, Held: true, Holder: chorusdir.Holder{PID: old}}, true, lossExit},
		{"gone, the lock still read as its own", chorusdir.LockState{Present: true, Held: true, Holder: chorusdir.Holder{PID: old}}, false, lossExit},
	} {
		if got := decideLoss(c.lock, old, c.alive); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
