//go:build linux && race

package remote

import (
	"runtime"
	"unsafe"
)

// ioSync stands for the socket in the race detector, as in package os's
// reads and writes: a read follows the write that sent its bytes (a test
// may run client and server in one process).
var ioSync int64

func raceWrote() { runtime.RaceReleaseMerge(unsafe.Pointer(&ioSync)) }
func raceRead()  { runtime.RaceAcquire(unsafe.Pointer(&ioSync)) }
