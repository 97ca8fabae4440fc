//go:build unix

// Command chorus-signal is `chorus signal` for agents, in an executable
// that links only the signal client: Go runs the initialisation of every
// package a binary links, and the chorus binary's Kubernetes client and
// TUI made each signal's start three times a bare process's. Installed
// beside chorus, the engine gives agents a `chorus` that is this program;
// any other command it hands to the chorus binary the engine names in
// CHORUS_EXE, with the same arguments.
package main

import (
	"fmt"
	"os"
	"syscall"

	"github.com/chorus-dev/chorus/agent/signal"
)

func main() {
	args := os.Args[1:]
	if signal.CommandArgs(args) {
		os.Exit(signal.Command(args[1:], os.Getenv, os.Stderr))
	}
	full := os.Getenv(signal.EnvExe)
	if full == "" {
		fmt.Fprintln(os.Stderr, "chorus-signal: only `chorus signal TYPE [PAYLOAD]` runs here without the chorus binary; run chorus itself for anything else")
		os.Exit(2)
	}
	err := syscall.Exec(full, append([]string{"chorus"}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "chorus-signal: cannot run %s: %v\n", full, err)
	os.Exit(1)
}
