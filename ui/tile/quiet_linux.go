package tile

import (
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/chorus-dev/chorus/rawio"
)

// quietTTY is the terminal at path opened once more for writing, written
// through rawio (a write the scheduler is told of woke its monitor thread
// once a frame); nil if it cannot be opened. This open file is the terminal's own (os.OpenFile puts it in the
// netpoller, non-blocking, apart from tcell's blocking descriptor), so a
// full terminal makes a write wait in the netpoller, not hold the
// processor.
var quietTTY = sync.OnceValue(func() io.Writer {
	f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	return quietWriter{rc: rc, f: f}
})

type quietWriter struct {
	rc syscall.RawConn
	f  *os.File // kept open for the process's life
}

func (q quietWriter) Write(b []byte) (int, error) { return rawio.Write(q.rc, b) }
