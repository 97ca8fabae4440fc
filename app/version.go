package app

import (
	"fmt"
	"runtime/debug"
)

// complete fills what -ldflags left empty from the build information the
// go command records: the module version (a release tag for
// `go install …@version`, a pseudo-version for a build in a git checkout)
// and the VCS commit, with "+dirty" when the checkout had uncommitted
// changes. A build in a linked git worktree or outside git records no VCS
// information; then the version reads "dev".
func (bi BuildInfo) complete(info *debug.BuildInfo, ok bool) BuildInfo {
	vcs := map[string]string{}
	if ok {
		for _, s := range info.Settings {
			vcs[s.Key] = s.Value
		}
		if bi.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			bi.Version = info.Main.Version
		}
	}
	if bi.Commit == "" && vcs["vcs.revision"] != "" {
		bi.Commit = vcs["vcs.revision"]
		if len(bi.Commit) > 12 {
			bi.Commit = bi.Commit[:12]
		}
		if vcs["vcs.modified"] == "true" {
			bi.Commit += "+dirty"
		}
		if bi.Date == "" && vcs["vcs.time"] != "" {
			bi.Date, bi.committed = vcs["vcs.time"], true
		}
	}
	if bi.Version == "" {
		bi.Version = "dev"
	}
	return bi
}

// String is what --version prints after "chorus ".
func (bi BuildInfo) String() string {
	s := bi.Version
	date := bi.Date
	if date != "" {
		date = map[bool]string{false: "built ", true: "committed "}[bi.committed] + date
	}
	switch {
	case bi.Commit != "" && date != "":
		s += fmt.Sprintf(" (commit %s, %s)", bi.Commit, date)
	case bi.Commit != "":
		s += fmt.Sprintf(" (commit %s)", bi.Commit)
	case date != "":
		s += fmt.Sprintf(" (%s)", date)
	}
	return s
}
