//go:build !linux

package main

import "syscall"

// sysAttr puts a container's process in a session of its own (its group
// is killed as one).
func sysAttr(tty bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: tty}
}
