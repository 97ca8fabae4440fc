package ptyproc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// killTagged scans /proc for processes of this user whose environment
// holds entry and kills them. An environment is read as it was at exec,
// which is what a descendant inherited.
func killTagged(entry string) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	want := []byte(entry)
	self := os.Getpid()
	n := 0
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil || len(env) == 0 {
			continue // gone, a kernel thread, or another user's
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					n++
				}
				break
			}
		}
	}
	return n
}

// tagOf is the value of EnvTag in pid's environment, or "".
func tagOf(pid int) string {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	prefix := []byte(EnvTag + "=")
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}
