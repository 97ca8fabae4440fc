package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// bd update, close, reopen, dep, label and delete.

func claim(is *issue, who string) {
	is.Status, is.Assignee, is.UpdatedAt = "in_progress", who, sec(now)
	if is.StartedAt == nil {
		t := sec(now)
		is.StartedAt = &t
	}
}

var statuses = map[string]bool{"open": true, "in_progress": true, "blocked": true, "deferred": true, "closed": true, "pinned": true, "hooked": true}

func update(d *db, f flags) {
	if f.has("status") && !statuses[f.get("status")] {
		fatalJSON(fmt.Sprintf("invalid status %q", f.get("status")))
	}
	var res []map[string]any
	for _, id := range f.pos {
		is := d.get(id)
		if is == nil {
			fmt.Fprintf(os.Stderr, "Error resolving %s: no issue found matching %q\n", id, id)
			continue
		}
		if f.has("claim") {
			who := actor(f)
			switch {
			case is.Status == "in_progress" && is.Assignee == who:
			case is.Status == "open" && (is.Assignee == "" || is.Assignee == who):
				claim(is, who)
			case is.Assignee != "" && is.Assignee != who:
				fmt.Fprintf(os.Stderr, "Error claiming %s: issue already claimed by %s\n", id, is.Assignee)
				continue
			default:
				fmt.Fprintf(os.Stderr, "Error claiming %s: issue not claimable: status %s\n", id, is.Status)
				continue
			}
		}
		if f.has("status") {
			is.Status = f.get("status")
		}
		if f.has("assignee") {
			is.Assignee = f.get("assignee")
		}
		if f.has("title") {
			is.Title = f.get("title")
		}
		if f.has("description") {
			is.Description = f.get("description")
		}
		if f.has("acceptance") {
			is.AcceptanceCriteria = f.get("acceptance")
		}
		if f.has("notes") {
			is.Notes = f.get("notes")
		}
		if f.has("append-notes") {
			if is.Notes != "" {
				is.Notes += "\n"
			}
			is.Notes += f.get("append-notes")
		}
		if f.has("priority") {
			is.Priority = priority(f.get("priority"), false)
		}
		if m := f.get("metadata"); m != "" {
			var add map[string]any
			if err := json.Unmarshal([]byte(m), &add); err != nil {
				fatalJSON("invalid metadata JSON")
			}
			if is.Metadata == nil {
				is.Metadata = map[string]any{}
			}
			for k, v := range add {
				is.Metadata[k] = v
			}
		}
		for _, l := range f.vals["add-label"] {
			if !contains(is.Labels, l) {
				is.Labels = append(is.Labels, l)
			}
		}
		is.UpdatedAt = sec(now)
		res = append(res, listItem(d, is))
		if other := os.Getenv("FAKEBD_CLAIM_RACE"); other != "" && f.has("claim") {
			// The double hand-out seen with real bd: this caller is told it
			// won while the stored claim is another's.
			is.Assignee = other
		}
	}
	if len(res) == 0 {
		os.Exit(1)
	}
	d.save()
	out(res)
}

func closeCmd(d *db, f flags) {
	reason := f.get("reason")
	if reason == "" {
		reason = "Closed"
	}
	var res []map[string]any
	wasReady := map[string]bool{}
	for _, is := range d.Issues {
		wasReady[is.ID] = isReady(d, is, false)
	}
	for _, id := range f.pos {
		is := d.get(id)
		if is == nil {
			fatalJSON(fmt.Sprintf("no issue found matching %q", id))
		}
		if b := openBlockers(d, is); len(b) > 0 && !f.has("force") {
			fmt.Fprintf(os.Stderr, "cannot close %s: blocked by open issues [%s] (use --force to override)\n", id, strings.Join(b, " "))
			continue
		}
		t := sec(now)
		is.Status, is.ClosedAt, is.CloseReason, is.UpdatedAt = "closed", &t, reason, t
		res = append(res, listItem(d, is))
	}
	if len(res) == 0 {
		os.Exit(1)
	}
	d.save()
	if f.has("suggest-next") {
		unblocked := []map[string]any{}
		for _, is := range d.Issues {
			if !wasReady[is.ID] && isReady(d, is, false) {
				unblocked = append(unblocked, plain(is))
			}
		}
		out(map[string]any{"closed": res, "unblocked": unblocked})
		return
	}
	out(res)
}

func reopen(d *db, f flags) {
	var res []map[string]any
	for _, id := range f.pos {
		is := d.get(id)
		if is == nil {
			fatal("Error resolving %s: no issue found matching %q", id, id)
		}
		if is.Status == "open" {
			fmt.Fprintf(os.Stderr, "%s is already open\n", id)
		}
		// The assignee is kept, as bd does.
		is.Status, is.ClosedAt, is.CloseReason, is.DeferUntil, is.UpdatedAt = "open", nil, "", nil, sec(now)
		res = append(res, listItem(d, is))
	}
	d.save()
	out(res)
}

func depCmd(d *db, f flags) {
	if len(f.pos) < 1 {
		fatal("Error: dep needs a subcommand")
	}
	op, args := f.pos[0], f.pos[1:]
	if op == "remove" && len(args) == 2 {
		depRemove(d, args[0], args[1])
		return
	}
	if op != "add" || len(args) != 2 {
		fatal("Error: unsupported dep command")
	}
	a, b := d.get(args[0]), d.get(args[1])
	if a == nil {
		fatal("Error: issue %s not found", args[0])
	}
	if b == nil {
		fatal("Error: issue %s not found", args[1])
	}
	typ := f.get("type")
	if typ == "" {
		typ = "blocks"
	}
	if blocking(typ) && reaches(d, b.ID, a.ID, map[string]bool{}) {
		fatalJSON("adding dependency would create a cycle")
	}
	if (a.IssueType == "epic") != (b.IssueType == "epic") && blocking(typ) {
		fatalJSON("tasks can only block other tasks, not epics")
	}
	a.Dependencies = append(a.Dependencies, dep{IssueID: a.ID, DependsOnID: b.ID, Type: typ, CreatedAt: sec(now), CreatedBy: actor(f), Metadata: "{}"})
	d.save()
	out(map[string]any{"issue_id": a.ID, "depends_on_id": b.ID, "type": typ, "status": "added"})
}

func reaches(d *db, from, to string, seen map[string]bool) bool {
	if from == to {
		return true
	}
	if seen[from] {
		return false
	}
	seen[from] = true
	is := d.get(from)
	if is == nil {
		return false
	}
	for _, dp := range is.Dependencies {
		if blocking(dp.Type) && reaches(d, dp.DependsOnID, to, seen) {
			return true
		}
	}
	return false
}

func label(d *db, f flags) {
	if len(f.pos) < 3 {
		fatal("Error: label needs a subcommand, ids and a label")
	}
	op, ids, l := f.pos[0], f.pos[1:len(f.pos)-1], f.pos[len(f.pos)-1]
	res := []map[string]any{}
	for _, id := range ids {
		is := d.get(id)
		if is == nil {
			// As bd 1.0.5: the error on stderr, the id left out of the
			// answer, and exit 0 all the same.
			fmt.Fprintf(os.Stderr, "Error resolving %s: no issue found matching %q\n", id, id)
			continue
		}
		switch op {
		case "add":
			if !contains(is.Labels, l) {
				is.Labels = append(is.Labels, l)
			}
			res = append(res, map[string]any{"issue_id": id, "label": l, "status": "added"})
		case "remove":
			var keep []string
			for _, x := range is.Labels {
				if x != l {
					keep = append(keep, x)
				}
			}
			is.Labels = keep
			res = append(res, map[string]any{"issue_id": id, "label": l, "status": "removed"})
		default:
			fatal("Error: unknown label command %q", op)
		}
	}
	d.save()
	out(res)
}

func depRemove(d *db, from, to string) {
	a := d.get(from)
	if a == nil {
		fatal("Error: issue %s not found", from)
	}
	keep := a.Dependencies[:0]
	found := false
	for _, x := range a.Dependencies {
		if x.DependsOnID == to {
			found = true
			continue
		}
		keep = append(keep, x)
	}
	if !found {
		fatalJSON(fmt.Sprintf("dependency %s -> %s not found", from, to))
	}
	a.Dependencies = keep
	d.save()
	out(map[string]any{"issue_id": from, "depends_on_id": to, "status": "removed"})
}

// deleteCmd is bd delete --force: the issue goes and so do edges on it.
func deleteCmd(d *db, f flags) {
	if !f.has("force") {
		fatal("Error: delete needs --force in this fake")
	}
	var res []string
	for _, id := range f.pos {
		if d.get(id) == nil {
			fatal("Error: issue %s not found", id)
		}
		keep := d.Issues[:0]
		for _, is := range d.Issues {
			if is.ID == id {
				continue
			}
			deps := is.Dependencies[:0]
			for _, x := range is.Dependencies {
				if x.DependsOnID != id {
					deps = append(deps, x)
				}
			}
			is.Dependencies = deps
			keep = append(keep, is)
		}
		d.Issues = keep
		res = append(res, id)
	}
	d.save()
	out(map[string]any{"deleted": res, "deleted_count": len(res)})
}
