package remote

import (
	"errors"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Errors a client branches on travel as a code beside the message, so
// errors.Is works across the socket as it does in-process.
var errCodes = map[string]error{
	"not-found":     beads.ErrNotFound,
	"claimed":       beads.ErrClaimed,
	"not-open":      beads.ErrNotOpen,
	"cycle":         beads.ErrCycle,
	"not-ready":     beads.ErrNotReady,
	"malformed":     beads.ErrMalformed,
	"dependency":    beads.ErrDependency,
	"unknown-agent": orchestrator.ErrUnknownAgent,
}

// errCode is err's code, "" for an error without one.
func errCode(err error) string {
	for code, e := range errCodes {
		if errors.Is(err, e) {
			return code
		}
	}
	return ""
}

// remoteError is an engine's error as a client sees it: the engine's
// message, and the sentinel its code names.
type remoteError struct {
	msg string
	is  error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.is }

func decodeError(msg, code string) error {
	return &remoteError{msg: msg, is: errCodes[code]}
}
