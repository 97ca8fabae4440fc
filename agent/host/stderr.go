package host

import (
	"os"

	"golang.org/x/sys/unix"
)

// stderrTo makes path (appended to) this process's stderr, the Go
// runtime's own reports included; /dev/null when it cannot be opened,
// so nothing is written to a pipe no one reads any more.
func stderrTo(path string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		if f, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil {
			return
		}
	}
	_ = unix.Dup2(int(f.Fd()), 2)
	f.Close()
}
