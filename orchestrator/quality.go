package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/proc"
)

// QualityResult is the outcome of one quality command.
type QualityResult struct {
	Name     string        `json:"name"`
	Command  string        `json:"command"`
	Required bool          `json:"required"`
	Passed   bool          `json:"passed"`
	ExitCode int           `json:"exitCode"`
	Duration time.Duration `json:"duration"`
	Output   string        `json:"output"` // tail
}

// runQuality runs every quality command in order in dir. Required ones
// decide: the result is ok when all of them passed. Optional ones run and
// are reported but never block. It stops at the first required failure,
// since later commands usually fail for the same reason. started, when
// set, hears each command's name as it starts.
func runQuality(ctx context.Context, dir string, cmds []config.QualityCommand, env []string, started func(name string)) (ok bool, results []QualityResult) {
	ok = true
	for _, c := range cmds {
		if started != nil {
			started(c.Name)
		}
		r, err := proc.Shell(ctx, c.Command, dir, env, c.Timeout())
		res := QualityResult{Name: c.Name, Command: c.Command, Required: c.Required, ExitCode: r.ExitCode, Duration: r.Duration}
		out := string(r.Stdout) + string(r.Stderr)
		if err != nil {
			out += "\n" + err.Error()
		}
		res.Output = tail(out, 4000)
		res.Passed = err == nil && r.ExitCode == 0
		results = append(results, res)
		if !res.Passed && c.Required {
			ok = false
			break
		}
		if ctx.Err() != nil {
			return false, results
		}
	}
	return ok, results
}

// describeFailure turns failed results into text for the agent.
func describeFailure(results []QualityResult) string {
	var b strings.Builder
	for _, r := range results {
		if r.Passed || !r.Required {
			continue
		}
		fmt.Fprintf(&b, "Required quality command %q (`%s`) failed with exit code %d. Its output ends with:\n%s\n", r.Name, r.Command, r.ExitCode, tail(r.Output, 1500))
	}
	return b.String()
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// lastLines is the last n non-empty lines of s.
func lastLines(s string, n int) string {
	var keep []string
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	return strings.Join(keep, "\n")
}
