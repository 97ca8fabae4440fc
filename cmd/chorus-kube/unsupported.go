//go:build !unix

// Chorus needs a Unix; see cmd/chorus.

package main

func main() {
	Chorus_needs_Linux_or_macOS__on_Windows_run_it_inside_WSL()
}
