package app

import (
	"runtime/debug"
	"sync"
)

// shortLived tunes the collector for a command that reads the task store
// once and exits (status, task list, ready): with the default GOGC, decoding
// 10,000 tasks collects several times over garbage the exit frees anyway,
// about a third of `chorus status`'s CPU after the task file changed. The
// heap may grow to four times the live data instead (tens of MB for 10,000
// tasks), bounded by a soft memory limit, above which the collector runs
// as usual. Never for the engine or the TUI, which live long.
var shortLived = sync.OnceFunc(func() {
	debug.SetGCPercent(400)
	if debug.SetMemoryLimit(-1) == 1<<63-1 { // no GOMEMLIMIT from the user
		debug.SetMemoryLimit(512 << 20)
	}
})
