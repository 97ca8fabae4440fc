package ptyproc

import "golang.org/x/sys/unix"

// maxAncestry bounds the walk up a process's parents.
const maxAncestry = 512

// Ancestry returns pid and its ancestors, nearest first, up to the first
// process whose parent cannot be read (init, or a process gone). A process
// cannot choose its parent, so this tells which agent a process belongs
// to in a way the process cannot forge (unlike its environment): what
// left the agent's tree (a daemon reparented to init) belongs to none.
func Ancestry(pid int) []int {
	var out []int
	for pid > 0 && len(out) < maxAncestry {
		out = append(out, pid)
		ppid, err := ParentOf(pid)
		if err != nil || ppid == pid {
			break
		}
		pid = ppid
	}
	return out
}

// SessionOf returns the session pid belongs to. An agent leads a session
// of its own (its terminal's), and a process can leave a session (setsid)
// but never join another: a command an agent ran in the background, whose
// shell has exited, is still in the agent's session although init is now
// its parent.
func SessionOf(pid int) (int, error) { return unix.Getsid(pid) }
