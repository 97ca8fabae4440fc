//go:build !unix

// Chorus needs a Unix: pseudo-terminals, process groups, flock and POSIX
// signals. On Windows, build and run it inside WSL. The undefined name
// below is the build error people see, so it says what to do.

package main

func main() {
	Chorus_needs_Linux_or_macOS__on_Windows_run_it_inside_WSL()
}
