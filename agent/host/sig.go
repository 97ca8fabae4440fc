package host

import (
	"os"
	"os/signal"
	"syscall"
)

// signalIgnore catches and drops SIGHUP and SIGINT rather than ignoring
// them: an ignored signal stays ignored in the agent after exec, a caught
// one is reset to its default there.
func signalIgnore() {
	c := make(chan os.Signal, 4)
	signal.Notify(c, syscall.SIGHUP, syscall.SIGINT)
	go func() {
		for range c {
		}
	}()
}
