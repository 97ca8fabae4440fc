package orchestrator

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/chorus-dev/chorus/chorusdir"
)

// fastSignalDir is the folder put first on an agent's PATH when
// chorus-signal, built from the same source as the chorus executable exe,
// is installed beside it: `.chorus/bin`, whose `chorus` is a link to it,
// so that `chorus signal` starts without the packages the full command
// line links (its start was three times a bare process's). Other commands
// chorus-signal hands to exe. "" otherwise: agents run exe itself.
func fastSignalDir(d chorusdir.Dir, exe string) string {
	fast := filepath.Join(filepath.Dir(exe), "chorus-signal")
	if !sameBuild(fast) {
		return ""
	}
	dir := d.Bin()
	link := filepath.Join(dir, "chorus")
	if t, err := os.Readlink(link); err == nil && t == fast {
		return dir
	}
	if err := os.MkdirAll(dir, chorusdir.DirMode); err != nil {
		return ""
	}
	// The folder keeps itself out of git, in checkouts set up before it
	// existed too (their .gitignore does not name it).
	// Replaced whole: one a stop cut short (empty) ignores nothing.
	if ig := filepath.Join(dir, ".gitignore"); !hasText(ig, "*\n") {
		if err := chorusdir.WriteAtomic(ig, []byte("*\n"), chorusdir.FileMode); err != nil {
			return ""
		}
	}
	tmp := link + ".new" + strconv.Itoa(os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(fast, tmp); err != nil {
		return ""
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return ""
	}
	return dir
}

// hostCommand is the command agent hosts start with: chorus-agent-host
// when it is installed beside the chorus executable exe from the same
// build (it links only the host, and starts in half the time), else
// `exe agent-host`.
func hostCommand(exe string) (string, []string) {
	small := filepath.Join(filepath.Dir(exe), "chorus-agent-host")
	if sameBuild(small) {
		return small, nil
	}
	return exe, []string{"agent-host"}
}

var sameBuilds sync.Map // path, size and mtime → bool: a binary is read once

// sameBuild reports whether the executable at path was built from the
// source this process was (module version and VCS revision), so that an
// older chorus-signal left beside an upgraded chorus is not used.
func sameBuild(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	key := path + "\x00" + strconv.FormatInt(st.Size(), 10) + "\x00" + strconv.FormatInt(st.ModTime().UnixNano(), 10)
	if v, ok := sameBuilds.Load(key); ok {
		return v.(bool)
	}
	ok := false
	if theirs, err := readBuildInfo(path); err == nil {
		if ours, has := debug.ReadBuildInfo(); has {
			ok = buildKey(theirs) == buildKey(ours)
		}
	}
	sameBuilds.Store(key, ok)
	return ok
}

func buildKey(bi *debug.BuildInfo) string {
	k := bi.Main.Path + "@" + bi.Main.Version + " " + bi.GoVersion
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" || s.Key == "vcs.time" {
			k += " " + s.Key + "=" + s.Value
		}
	}
	return k
}

// hasText reports whether the file p holds exactly text.
func hasText(p, text string) bool {
	b, err := os.ReadFile(p)
	return err == nil && string(b) == text
}
