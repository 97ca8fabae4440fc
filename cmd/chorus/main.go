//go:build unix

// Command chorus runs several AI coding agents in parallel on one git repository.
package main

import (
	"os"

	"github.com/chorus-dev/chorus/app"
)

// Set at build time with -ldflags "-X main.version=… -X main.commit=… -X
// main.date=…"; without them the version and commit come from the build
// information the go command records (see app.BuildInfo).
var version, commit, date string

func main() {
	os.Exit(app.Main(os.Args[1:], app.BuildInfo{Version: version, Commit: commit, Date: date}))
}
