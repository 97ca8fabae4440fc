package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/beads"
)

// Markdown renders the report for a person (and for .chorus/reports/).
// Task titles, reasons and questions come from agents and the task store:
// they are sanitised, and kept on one line.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chorus report\n\n")
	since := "the beginning of the log"
	if !r.Since.IsZero() {
		since = r.Since.Local().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(&b, "From %s to %s; wall time %s.\n\n", since, r.Until.Local().Format("2006-01-02 15:04:05"), r.Wall.Round(time.Second))
	fmt.Fprintf(&b, "**%d landed, %d failed or blocked, %d waiting for you.**\n\n", len(r.Landed), len(r.Failed), len(r.Waiting))

	b.WriteString("## Landed\n\n")
	if len(r.Landed) == 0 {
		b.WriteString("Nothing landed.\n")
	}
	for _, l := range r.Landed {
		fmt.Fprintf(&b, "- `%s` %s — commit `%s` (%s)\n", clean(l.Task), clean(l.Title), short(l.Commit), l.At.Local().Format("15:04:05"))
	}
	b.WriteString("\n## Failed\n\n")
	if len(r.Failed) == 0 {
		b.WriteString("Nothing failed.\n")
	}
	for _, f := range r.Failed {
		fmt.Fprintf(&b, "- `%s` %s — %s: %s\n", clean(f.Task), clean(f.Title), f.Kind, orNone(clean(f.Reason)))
	}
	b.WriteString("\n## Waiting for you\n\n")
	if len(r.Waiting) == 0 {
		b.WriteString("Nothing waits for a person.\n")
	}
	for _, w := range r.Waiting {
		fmt.Fprintf(&b, "- `%s` %s\n  next: `%s`\n", clean(w.Task), clean(w.What), clean(w.Next))
	}
	b.WriteString("\n## Cost\n\n")
	if len(r.Tasks) == 0 {
		b.WriteString("No usage reported by the agents.\n")
	} else {
		b.WriteString("| task | title | tokens | cost | agent time |\n|---|---|---|---|---|\n")
		for _, c := range r.Tasks {
			fmt.Fprintf(&b, "| `%s` | %s | %d | %s | %s |\n", clean(c.Task), strings.ReplaceAll(clean(c.Title), "|", "\\|"), c.Usage.Tokens(), dollars(c.Usage.CostUSD), c.Runtime.Round(time.Second))
		}
		fmt.Fprintf(&b, "| **total** | | %d | %s | |\n", r.Total.Tokens(), dollars(r.Total.CostUSD))
	}
	return b.String()
}

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
