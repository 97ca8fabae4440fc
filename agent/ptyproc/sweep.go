package ptyproc

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// EnvTag names the variable every process started here carries, with a
// value unique to that process. Its descendants inherit it, including
// those that leave the process group (setsid, daemons such as interactive
// codex's helper), so Stop can find and end them too.
const EnvTag = "CHORUS_PROC_TAG"

func newTag() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sweep kills every process still carrying the tag, by SIGKILL, and
// returns how many it found.
func (p *Proc) sweep() int {
	if p.tag == "" {
		return 0
	}
	return killTagged(EnvTag+"="+p.tag, p.created)
}

// StopOrphanTree is StopOrphan plus the sweep: it also ends what the
// orphan started outside its group, found by the tag read from the
// orphan's environment before it is stopped.
func StopOrphanTree(pid int, startTime uint64, grace time.Duration) bool {
	var tag string
	if Alive(pid, startTime) {
		tag = tagOf(pid)
	}
	found := StopOrphan(pid, startTime, grace)
	if tag != "" {
		killTagged(EnvTag+"="+tag, pidMark{}) // no mark: every process is looked at
	}
	return found
}
