package main

import "syscall"

// sysAttr puts a container's process in a session of its own (its group
// is killed as one); it dies with the node, whatever kills the node.
func sysAttr(tty bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: tty, Pdeathsig: syscall.SIGKILL}
}
