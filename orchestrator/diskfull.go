package orchestrator

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
)

// A full disk (ENOSPC, or a quota: EDQUOT) fails every task alike, and
// retrying only fails again: the first sight of it pauses the run once,
// saying which file system to free, instead of counting start failures.

// DiskFull says whether an error text is a file system saying it is full:
// Go's and libc's wording of ENOSPC and EDQUOT, and Node's error code.
func DiskFull(text string) bool {
	t := strings.ToLower(text)
	for _, s := range []string{"no space left on device", "disk quota exceeded", "enospc", "edquot"} {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// DiskFullText is the pause's message: the file system and what is free.
func DiskFullText(mount string, free uint64, known bool) string {
	if !known {
		return fmt.Sprintf("disk full: free space on %s, then resume", mount)
	}
	return fmt.Sprintf("disk full: free space on %s (%s free), then resume", mount, bytesText(free))
}

func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// mountOf is the mount point of the file system holding path (the
// highest directory on the same device) and the bytes free there for an
// unprivileged user.
func mountOf(path string) (string, uint64, bool) {
	p, err := filepath.Abs(path)
	if err != nil {
		return path, 0, false
	}
	var st syscall.Stat_t
	if syscall.Stat(p, &st) != nil {
		return p, 0, false
	}
	for {
		up := filepath.Dir(p)
		var su syscall.Stat_t
		if up == p || syscall.Stat(up, &su) != nil || su.Dev != st.Dev {
			break
		}
		p = up
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(p, &fs) != nil {
		return p, 0, false
	}
	return p, uint64(fs.Bavail) * uint64(fs.Bsize), true
}

// diskFull pauses the run for a full disk seen in failure, once: while
// the pause it made holds, further failures only add to the log. Loop
// only.
func (e *Engine) diskFull(task, failure string) {
	if e.diskPaused && e.st.Paused {
		return
	}
	mount, free, known := mountOf(e.opt.Dir.Root)
	msg := DiskFullText(mount, free, known)
	e.diskPaused = true
	e.st.Paused = true
	e.emit(Event{Kind: EvPaused, Task: task, Text: msg, Fields: map[string]any{"diskFull": mount, "cause": oneLine(failure, 300)}})
}
