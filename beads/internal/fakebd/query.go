package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// bd show, list and ready: readiness as bd computes it, and the JSON
// shapes bd prints.

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func active(s string) bool { return s != "closed" && s != "pinned" }

func blocking(t string) bool { return t == "blocks" || t == "conditional-blocks" }

// openBlockers lists the active blockers of is.
func openBlockers(d *db, is *issue) []string {
	var outs []string
	for _, dp := range is.Dependencies {
		if b := d.get(dp.DependsOnID); blocking(dp.Type) && b != nil && active(b.Status) {
			outs = append(outs, b.ID)
		}
	}
	return outs
}

func parentOf(is *issue) string {
	for _, dp := range is.Dependencies {
		if dp.Type == "parent-child" {
			return dp.DependsOnID
		}
	}
	return ""
}

func isReady(d *db, is *issue, includeDeferred bool) bool {
	if is.Status != "open" || len(openBlockers(d, is)) > 0 {
		return false
	}
	switch is.IssueType {
	case "merge-request", "gate", "molecule", "message", "agent", "role", "rig":
		return false
	}
	if !includeDeferred && is.DeferUntil != nil && is.DeferUntil.After(now) {
		return false
	}
	if p := d.get(parentOf(is)); p != nil {
		if active(p.Status) && len(openBlockers(d, p)) > 0 {
			return false
		}
		if p.DeferUntil != nil && p.DeferUntil.After(now) {
			return false
		}
	}
	return true
}

// listItem is the ready/list shape: issue, labels, raw deps, counts, parent.
func listItem(d *db, is *issue) map[string]any {
	b, _ := json.Marshal(is)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	n := 0
	for _, dp := range is.Dependencies {
		if blocking(dp.Type) {
			n++
		}
	}
	dn := 0
	for _, o := range d.Issues {
		for _, dp := range o.Dependencies {
			if dp.DependsOnID == is.ID && blocking(dp.Type) {
				dn++
			}
		}
	}
	m["dependency_count"], m["dependent_count"], m["comment_count"] = n, dn, 0
	if p := parentOf(is); p != "" {
		m["parent"] = p
	}
	return m
}

func plain(is *issue) map[string]any {
	c := *is
	c.Dependencies = nil
	b, _ := json.Marshal(&c)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func show(d *db, f flags) {
	var res []map[string]any
	for _, id := range f.pos {
		is := d.get(id)
		if is == nil {
			fmt.Fprintf(os.Stderr, "Error fetching %s: no issue found matching %q\n", id, id)
			fatalJSON("no issues found matching the provided IDs")
		}
		m := plain(is)
		var deps, dependents []map[string]any
		for _, dp := range is.Dependencies {
			if t := d.get(dp.DependsOnID); t != nil {
				x := plain(t)
				x["dependency_type"] = dp.Type
				deps = append(deps, x)
			}
		}
		for _, o := range d.Issues {
			for _, dp := range o.Dependencies {
				if dp.DependsOnID == is.ID {
					x := plain(o)
					x["dependency_type"] = dp.Type
					dependents = append(dependents, x)
				}
			}
		}
		if deps != nil {
			m["dependencies"] = deps
		}
		if dependents != nil {
			m["dependents"] = dependents
		}
		if p := parentOf(is); p != "" {
			m["parent"] = p
		}
		res = append(res, m)
	}
	out(res)
}

func limit(f flags, def int) int {
	if !f.has("limit") {
		return def
	}
	n, err := strconv.Atoi(f.get("limit"))
	if err != nil {
		fatal("Error: invalid argument %q for \"-n, --limit\" flag", f.get("limit"))
	}
	return n
}

func list(d *db, f flags) {
	statuses := map[string]bool{}
	for _, s := range strings.Split(f.get("status"), ",") {
		if s != "" {
			statuses[s] = true
		}
	}
	res := []map[string]any{}
	for _, is := range d.Issues {
		if len(statuses) > 0 && !statuses[is.Status] {
			continue
		}
		if len(statuses) == 0 && !f.has("all") && (is.Status == "closed" || is.Status == "pinned") {
			continue
		}
		res = append(res, listItem(d, is))
	}
	if n := limit(f, 50); n > 0 && len(res) > n {
		res = res[:n]
	}
	out(res)
}

func sortReady(xs []*issue) {
	// bd's default "priority" policy: priority, then newest first, then id.
	sort.SliceStable(xs, func(a, b int) bool {
		if xs[a].Priority != xs[b].Priority {
			return xs[a].Priority < xs[b].Priority
		}
		if !xs[a].CreatedAt.Equal(xs[b].CreatedAt) {
			return xs[a].CreatedAt.After(xs[b].CreatedAt)
		}
		return xs[a].ID < xs[b].ID
	})
}

func ready(d *db, f flags) {
	var rs []*issue
	for _, is := range d.Issues {
		if isReady(d, is, f.has("include-deferred")) {
			if (f.has("claim") || f.has("unassigned")) && is.Assignee != "" {
				continue
			}
			rs = append(rs, is)
		}
	}
	sortReady(rs)
	if f.has("claim") {
		res := []map[string]any{}
		for _, is := range rs {
			if is.IssueType == "epic" && f.get("exclude-type") == "epic" {
				continue
			}
			claim(is, actor(f))
			d.save()
			res = append(res, listItem(d, is))
			break
		}
		out(res)
		return
	}
	res := []map[string]any{}
	for _, is := range rs {
		res = append(res, listItem(d, is))
	}
	if n := limit(f, 100); n > 0 && len(res) > n {
		fmt.Fprintf(os.Stderr, "Showing %d of %d ready issues (use -n 0 for all)\n", n, len(res))
		res = res[:n]
	}
	out(res)
}
