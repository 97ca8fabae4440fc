package signal

import (
	"fmt"
	"io"
	"strings"
)

// CommandArgs reports whether args (after the program name) are `signal
// TYPE [PAYLOAD]` with no flag: the shape Command runs without the full
// command line. Anything else (a flag, help, a wrong count) is the full
// command line's.
func CommandArgs(args []string) bool {
	if len(args) < 2 || len(args) > 3 || args[0] != "signal" {
		return false
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			return false
		}
	}
	return true
}

// Command runs `chorus signal TYPE [PAYLOAD]` (args without "signal"),
// the same for the chorus binary and chorus-signal: what it says goes to
// stderr and the exit code comes back (2: a key that is missing or not
// the agent's, nothing sent; 1: the engine refused it or is not there).
func Command(args []string, getenv func(string) string, stderr io.Writer) int {
	from, sig, err := FromEnv(args, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "chorus: "+err.Error())
		return 2
	}
	if err := Send(from, sig); err != nil {
		fmt.Fprintln(stderr, "chorus: "+err.Error())
		return 1
	}
	fmt.Fprintf(stderr, "chorus: %s sent for %s\n", sig, from.TaskID)
	return 0
}
