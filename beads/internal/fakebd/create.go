package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// bd create: ids with the database's prefix, priorities, the new issue.

func prefix(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "issue-prefix" {
			return strings.TrimRight(strings.Trim(strings.TrimSpace(v), `"`), "-")
		}
	}
	return "fk"
}

func priority(s string, jsonOut bool) int {
	s = strings.TrimPrefix(strings.ToUpper(s), "P")
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 || p > 4 {
		if jsonOut {
			fmt.Fprintf(os.Stderr, "{\"error\":\"invalid priority %q (expected 0-4 or P0-P4)\",\"schema_version\":1}\n", s)
			os.Exit(1)
		}
		fatal("Error: invalid priority %q (expected 0-4 or P0-P4)", s)
	}
	return p
}

func create(d *db, f flags, dir string) {
	title := f.get("title")
	if title == "" && len(f.pos) > 0 {
		title = f.pos[0]
	}
	if title == "" {
		fatal("Error: title required")
	}
	is := &issue{Title: title, Status: "open", Priority: 2, IssueType: "task", CreatedAt: now, UpdatedAt: now, CreatedBy: actor(f),
		Description: f.get("description"), AcceptanceCriteria: f.get("acceptance"), Design: f.get("design"), Notes: f.get("notes"), Assignee: f.get("assignee")}
	if f.has("priority") {
		is.Priority = priority(f.get("priority"), true)
	}
	if f.has("type") {
		is.IssueType = f.get("type")
	}
	if m := f.get("metadata"); m != "" {
		if err := json.Unmarshal([]byte(m), &is.Metadata); err != nil {
			fatal("Error: invalid metadata JSON: %v", err)
		}
	}
	is.ID = f.get("id")
	if is.ID != "" && d.get(is.ID) != nil {
		fatal("Error: issue %s already exists", is.ID)
	}
	for n := 0; is.ID == ""; n++ {
		h := sha256.Sum256(fmt.Appendf(nil, "%s|%d|%d", title, now.UnixNano(), n))
		id := prefix(dir) + "-" + new(big.Int).SetBytes(h[:]).Text(36)[:4+n/10]
		if d.get(id) == nil {
			is.ID = id
		}
	}
	echo := *is
	stored := *is
	stored.CreatedAt, stored.UpdatedAt = sec(now), sec(now)
	d.Issues = append(d.Issues, &stored)
	// Labels and deps are separate statements after the insert, and their
	// failures are only warnings.
	if l := f.get("labels"); l != "" {
		for _, x := range strings.Split(l, ",") {
			if x = strings.TrimSpace(x); x != "" && !contains(stored.Labels, x) {
				stored.Labels = append(stored.Labels, x)
			}
		}
	}
	for _, spec := range f.vals["deps"] {
		for _, one := range strings.Split(spec, ",") {
			one = strings.TrimSpace(one)
			if one == "" {
				continue
			}
			typ, target := "depends-on", one
			if k, v, ok := strings.Cut(one, ":"); ok {
				typ, target = k, v
			}
			from, to := stored.ID, target
			switch typ {
			case "depends-on", "blocked-by":
				typ = "blocks"
			case "blocks":
				from, to = target, stored.ID
			}
			if d.get(target) == nil {
				fmt.Fprintf(os.Stderr, "Warning: failed to add dependency %s -> %s: issue %s not found\n", from, to, target)
				continue
			}
			src := d.get(from)
			src.Dependencies = append(src.Dependencies, dep{IssueID: from, DependsOnID: to, Type: typ, CreatedAt: sec(now), CreatedBy: actor(f), Metadata: "{}"})
		}
	}
	d.save()
	if f.has("silent") {
		fmt.Println(echo.ID)
		return
	}
	out(echo)
}
