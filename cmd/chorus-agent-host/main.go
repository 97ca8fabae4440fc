//go:build unix

// Command chorus-agent-host is `chorus agent-host` in an executable that
// links only the agent host: the engine starts one per agent run, and the
// chorus binary's package initialisation (its Kubernetes client, its TUI)
// doubled each host's start. Installed beside chorus from the same build,
// the engine starts agent hosts with it; otherwise, and in pods, hosts
// run as `chorus agent-host`.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/chorus-dev/chorus/agent/host"
)

func main() {
	if err := host.Main(os.Args[1:], version()); err != nil {
		fmt.Fprintln(os.Stderr, "chorus-agent-host:", err)
		os.Exit(2)
	}
}

// version is what the host tells engines it is: the module version and
// commit the go command recorded.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (commit " + s.Value[:12] + ")"
		}
	}
	return v
}
