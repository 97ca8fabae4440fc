package beads

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chorus-dev/chorus/proc"
)

// BdError is a failed bd call: its exit code and the message bd gave.
type BdError struct {
	Args     []string
	ExitCode int
	Msg      string
	kind     error
}

func (e *BdError) Error() string {
	if e.kind == ErrCorrupt {
		return fmt.Sprintf("bd %s: %s (%s)", e.Args[0], e.Msg, CorruptHint)
	}
	return fmt.Sprintf("bd %s: %s", e.Args[0], e.Msg)
}

func (e *BdError) Unwrap() error { return e.kind }

// bdFailure takes the message from a JSON error object (stdout, or stderr
// in FatalError's --json form) or from stderr's error lines; warnings and
// other stderr noise are left out.
func bdFailure(args []string, res proc.Result) error {
	msg := jsonError(res.Stdout)
	if msg == "" {
		msg = jsonError(res.Stderr)
	}
	if msg == "" {
		var lines []string
		for _, l := range strings.Split(string(res.Stderr), "\n") {
			l = strings.TrimSpace(l)
			low := strings.ToLower(l)
			if strings.HasPrefix(low, "error") || strings.HasPrefix(low, "cannot") || strings.HasPrefix(low, "hint:") {
				lines = append(lines, l)
			}
		}
		msg = strings.Join(lines, "; ")
	}
	if msg == "" {
		for _, l := range strings.Split(strings.TrimSpace(string(res.Stderr)), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(strings.ToLower(l), "warning") {
				msg = l
			}
		}
	}
	if msg == "" {
		msg = "exit status " + strconv.Itoa(res.ExitCode)
	}
	return &BdError{Args: args, ExitCode: res.ExitCode, Msg: msg, kind: classify(msg)}
}

// jsonError reads the error object bd printed. Its embedded Dolt logs
// warnings to the same stream first (a logfmt line such as
// `time=… level=warning msg=…`), so the object starts at the first line
// that opens one.
func jsonError(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] != '{' {
		i := bytes.Index(b, []byte("\n{"))
		if i < 0 {
			return ""
		}
		b = b[i+1:]
	}
	if len(b) == 0 {
		return ""
	}
	var e struct {
		Error string `json:"error"`
		Data  struct {
			Error string `json:"error"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &e) != nil {
		return ""
	}
	if e.Error != "" {
		return e.Error
	}
	return e.Data.Error
}

func classify(msg string) error {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "serialization failure"), strings.Contains(m, "error 1213"), strings.Contains(m, "(40001)"):
		// Dolt's optimistic transactions: another writer committed first.
		// Nothing was written; the call may be made again.
		return ErrConflict
	case corrupt(m):
		return ErrCorrupt
	case strings.Contains(m, "already claimed"):
		return ErrClaimed
	case strings.Contains(m, "not claimable"):
		return ErrNotOpen
	case strings.Contains(m, "cycle"):
		return ErrCycle
	case strings.Contains(m, "blocked by open issues"):
		return ErrNotReady
	case strings.Contains(m, "no issue found"), strings.Contains(m, "no issues found"), strings.Contains(m, "not found"):
		return ErrNotFound
	}
	return nil
}

// corrupt says whether bd's message (lower case) is its database failing:
// corruption named as such (Dolt's and SQLite's wordings), or bd failing
// to open the database for a reason that is not a lock, a server or a
// permission (those pass, and retrying or fixing them loses nothing).
func corrupt(m string) bool {
	for _, s := range []string{"corrupt", "database disk image is malformed", "checksum mismatch", "invalid manifest", "integrity check failed"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	if !strings.Contains(m, "failed to open database") {
		return false
	}
	for _, s := range []string{"lock", "connection refused", "no such host", "timeout", "timed out", "permission denied", "no space left"} {
		if strings.Contains(m, s) {
			return false
		}
	}
	return true
}
