package app

import "testing"

// Heap profiling stays on only where a heap profile is asked for or
// GODEBUG sets its rate.
func TestKeepsMemProfile(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"GODEBUG": "madvdontneed=1"}, false},
		{map[string]string{HeapProfileEnv: "/tmp/heap-%p"}, true},
		{map[string]string{"GODEBUG": "gctrace=1,memprofilerate=1"}, true},
		{map[string]string{"GODEBUG": "memprofilerate=0"}, true},
	} {
		if got := keepsMemProfile(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("keepsMemProfile(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}
