package taskrules

import (
	"fmt"
	"strconv"
	"strings"
)

// Limit is one row of task-rules.md's Configurable Limits table.
type Limit struct {
	Name        string
	Value       int
	Description string
}

// limitRows calls fn with each data row of the limits table: its line
// index and its cells, trimmed.
func limitRows(lines []string, fn func(i int, cells []string)) {
	section := false
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "#") {
			h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
			section = strings.HasPrefix(h, "configurable limits")
			continue
		}
		if !section || !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		name := strings.Trim(cells[0], "`")
		if strings.EqualFold(name, "setting") || strings.Trim(name, "-: ") == "" {
			continue // header or separator row
		}
		cells[0] = name
		fn(i, cells)
	}
}

// Limits lists the limits table's rows in the order written (the init
// wizard shows and edits them). Rows Parse would refuse are left out.
func Limits(text string) []Limit {
	var out []Limit
	limitRows(strings.Split(text, "\n"), func(_ int, cells []string) {
		if _, ok := limits[cells[0]]; !ok || len(cells) < 2 {
			return
		}
		v, err := strconv.Atoi(cells[1])
		if err != nil || v < 0 {
			return
		}
		l := Limit{Name: cells[0], Value: v}
		if len(cells) > 2 {
			l.Description = cells[2]
		}
		out = append(out, l)
	})
	return out
}

// SetLimits writes values into the Value cells of the limits table and
// leaves every other byte of the file as it was. A value for a setting
// the table lacks, or a negative one, is an error.
func SetLimits(text string, values map[string]int) (string, error) {
	lines := strings.Split(text, "\n")
	seen := map[string]bool{}
	limitRows(lines, func(i int, cells []string) {
		v, ok := values[cells[0]]
		if !ok || len(cells) < 2 {
			return
		}
		cells[1] = strconv.Itoa(v)
		lines[i] = "| " + strings.Join(cells, " | ") + " |"
		seen[cells[0]] = true
	})
	for name, v := range values {
		if v < 0 {
			return "", fmt.Errorf("%s: %d is not valid; allowed: a whole number, 0 for no limit", name, v)
		}
		if !seen[name] {
			return "", fmt.Errorf("%s is not in the Configurable Limits table; add its row to task-rules.md first", name)
		}
	}
	return strings.Join(lines, "\n"), nil
}
