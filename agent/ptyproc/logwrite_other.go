//go:build !linux

package ptyproc

import "os"

// appendLog writes b to the log file.
func appendLog(f *os.File, b []byte) error {
	_, err := f.Write(b)
	return err
}
