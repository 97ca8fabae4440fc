//go:build !linux

package ptyproc

import "golang.org/x/sys/unix"

// rawRead is read(2); elsewhere the terminal is read through the
// netpoller (pollable), and this is not on its path.
func rawRead(fd uintptr, buf []byte) (int, error) { return unix.Read(int(fd), buf) }
