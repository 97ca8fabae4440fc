package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/beads"
)

// Period says in words which period the report covers.
func (r Report) Period() string {
	since := "the beginning of the session log"
	if !r.Since.IsZero() {
		since = stamp(r.Since)
	}
	why := ""
	switch r.From {
	case FromReport:
		why = fmt.Sprintf(" (since the last report, produced %s)", stamp(r.LastReport))
	case FromUnread:
		why = fmt.Sprintf(" (the runs since the last report you read; the latest report written at a run's end was at %s)", stamp(r.LastReport))
	case FromLog:
		why = " (no report was produced before: everything in the log)"
	case FromSince:
		why = " (as asked with --since)"
	}
	return fmt.Sprintf("From %s to %s%s", since, stamp(r.Until), why)
}

// Markdown renders the report for a person (and for .chorus/reports/).
// Task titles, reasons and questions come from agents and the task store:
// they are sanitised, and kept on one line.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chorus report\n\n")
	fmt.Fprintf(&b, "%s; wall time %s, %d start(s) of Chorus.\n\n", r.Period(), r.Wall.Round(time.Second), r.Sessions)
	var failed []Failed // blocked tasks are told under Waiting, with their reason
	for _, f := range r.Failed {
		if f.Kind == "failed" {
			failed = append(failed, f)
		}
	}
	fmt.Fprintf(&b, "**%d landed, %d failed, %d waiting for you, %d pause(s), %d iteration(s) retried, %d conflict(s).**\n\n",
		len(r.Landed), len(failed), len(r.Waiting), len(r.Pauses), len(r.Retries), len(r.Conflicts))

	b.WriteString("## Waiting for you\n\n")
	if len(r.Waiting) == 0 {
		b.WriteString("Nothing waits for a person.\n")
	}
	for _, w := range r.Waiting {
		fmt.Fprintf(&b, "- `%s` %s\n  next: `%s`\n", clean(w.Task), clean(w.What), clean(w.Next))
	}
	b.WriteString("\n## Failed\n\n")
	if len(failed) == 0 {
		b.WriteString("Nothing failed.\n")
	}
	for _, f := range failed {
		fmt.Fprintf(&b, "- `%s` %s — %s: %s (%s)\n  next: `%s`\n", clean(f.Task), clean(f.Title), f.Kind, orNone(clean(f.Reason)), clock(f.At), clean(f.Next))
		if f.Output != "" && !strings.Contains(f.Reason, "last output") {
			fmt.Fprintf(&b, "  last output: %s\n", clean(lastLines(f.Output, 3)))
		}
		if f.Ledger != "" {
			fmt.Fprintf(&b, "  ledger: `%s`\n", clean(f.Ledger))
		}
	}
	b.WriteString("\n## Pauses\n\n")
	if len(r.Pauses) == 0 {
		b.WriteString("Nothing paused.\n")
	}
	for _, p := range r.Pauses {
		until := "still paused at the end"
		if !p.Until.IsZero() {
			until = fmt.Sprintf("resumed %s after %s: %s", clock(p.Until), p.Until.Sub(p.At).Round(time.Second), clean(p.Resumed))
		}
		what := "paused"
		switch p.Hold {
		case "usage-limit":
			what = "held for the account's usage limit"
		case "outage":
			what = "held for an outage"
		}
		window := ""
		if !p.ResetAt.IsZero() {
			window = fmt.Sprintf(" (reset at %s, %s)", clock(p.ResetAt), map[bool]string{true: "as the CLI said", false: "estimated: backoff"}[p.ResetKnown])
		}
		if p.Probes > 0 {
			window += fmt.Sprintf(", %d probe(s)", p.Probes)
		}
		fmt.Fprintf(&b, "- %s %s %s: %s%s — %s\n", p.Scope, what, clock(p.At), orNone(clean(p.Cause)), window, until)
	}
	b.WriteString("\n## Landed\n\n")
	if len(r.Landed) == 0 {
		b.WriteString("Nothing landed.\n")
	}
	for _, l := range r.Landed {
		fmt.Fprintf(&b, "- `%s` %s — commit `%s` (%s)\n", clean(l.Task), clean(l.Title), short(l.Commit), clock(l.At))
	}
	b.WriteString("\n## Conflicts\n\n")
	if len(r.Conflicts) == 0 {
		b.WriteString("No merge conflicted.\n")
	}
	for _, c := range r.Conflicts {
		files := ""
		if len(c.Files) > 0 {
			files = " in " + clean(strings.Join(c.Files, ", "))
		}
		expl := ""
		if c.Explanation != "" {
			expl = ": " + clean(c.Explanation)
		}
		fmt.Fprintf(&b, "- `%s`%s (%s) — %s%s\n", clean(c.Task), files, clock(c.At), c.Outcome, expl)
	}
	b.WriteString("\n## Iterations retried\n\n")
	if len(r.Retries) == 0 {
		b.WriteString("No iteration was retried.\n")
	}
	for _, t := range r.Retries {
		fmt.Fprintf(&b, "- `%s` iteration %d (%s): %s\n", clean(t.Task), t.Iteration, clock(t.At), clean(t.Why))
	}
	if len(r.Released) > 0 {
		b.WriteString("\n## Team\n\n")
		for _, d := range r.Released {
			fmt.Fprintf(&b, "- `%s` (%s): %s\n", clean(d.Task), clock(d.At), clean(d.Why))
		}
	}
	b.WriteString("\n## Cost\n\n")
	if len(r.Tasks) == 0 && r.Planning.Runs == 0 {
		b.WriteString("No task or planning run in the period.\n")
	} else {
		b.WriteString("| task | title | outcome | iterations | tokens | cost | agent time |\n|---|---|---|---|---|---|---|\n")
		if r.Planning.Runs > 0 {
			fmt.Fprintf(&b, "| planning | %d Plan Agent run(s) | | | %d | %s | |\n", r.Planning.Runs, r.Planning.Usage.Tokens(), dollars(r.Planning.Usage.CostUSD))
		}
		for _, c := range r.Tasks {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %d | %s | %s |\n", clean(c.Task), strings.ReplaceAll(clean(c.Title), "|", "\\|"), c.Outcome, c.Iterations,
				c.Usage.Tokens(), dollars(c.Usage.CostUSD), c.Runtime.Round(time.Second))
		}
		fmt.Fprintf(&b, "| **total** | | | | %d | %s | |\n", r.Total.Tokens(), dollars(r.Total.CostUSD))
	}
	return b.String()
}

func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }
func clock(t time.Time) string { return t.Local().Format("15:04:05") }

func dollars(c float64) string {
	if c == 0 {
		return "not reported"
	}
	return fmt.Sprintf("$%.4f", c)
}

func clean(s string) string {
	return strings.Join(strings.Fields(beads.SanitizeText(s)), " ")
}

func short(c string) string {
	if c == "" {
		return "(none)"
	}
	return c[:min(12, len(c))]
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// lastLines keeps the last n non-empty lines of s, joined with " / ".
func lastLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimSpace(l))
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return strings.Join(out, " / ")
}
