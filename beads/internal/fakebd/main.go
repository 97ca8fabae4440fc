// Command fakebd is a stand-in for the beads `bd` CLI, for tests on machines
// without bd. It follows the measured contract in docs/beads-cli.md for the
// commands Chorus uses: output shapes (objects carry schema_version, show
// returns an array with full dependency objects, create echoes no labels or
// deps), exit codes, stderr texts, compare-and-swap claims, and dependency
// failures that are only warnings with exit 0, and bd 1.0.5's `label
// add|remove` on a missing id (error on stderr, `[]`, exit 0). Data lives in
// $BEADS_DIR/fakebd.json; every command holds an flock on
// $BEADS_DIR/fakebd.lock, as bd v1.0.x does on its database.
//
// Test hooks: FAKEBD_COUNT=<file> appends one line per invocation;
// FAKEBD_HANG=<fifo> starts a child in the same process group, writes its
// pid to the fifo and hangs; FAKEBD_QUIET=1 drops the stderr warning every
// call otherwise prints; FAKEBD_CLAIM_RACE=<actor> makes `update --claim`
// report success while storing <actor> as the assignee.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type dep struct {
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by,omitempty"`
	Metadata    string    `json:"metadata"`
}

type issue struct {
	ID                 string         `json:"id"`
	Title              string         `json:"title"`
	Description        string         `json:"description,omitempty"`
	Design             string         `json:"design,omitempty"`
	AcceptanceCriteria string         `json:"acceptance_criteria,omitempty"`
	Notes              string         `json:"notes,omitempty"`
	Status             string         `json:"status,omitempty"`
	Priority           int            `json:"priority"`
	IssueType          string         `json:"issue_type,omitempty"`
	Assignee           string         `json:"assignee,omitempty"`
	Owner              string         `json:"owner,omitempty"`
	CreatedAt          time.Time      `json:"created_at"`
	CreatedBy          string         `json:"created_by,omitempty"`
	UpdatedAt          time.Time      `json:"updated_at"`
	StartedAt          *time.Time     `json:"started_at,omitempty"`
	ClosedAt           *time.Time     `json:"closed_at,omitempty"`
	CloseReason        string         `json:"close_reason,omitempty"`
	DeferUntil         *time.Time     `json:"defer_until,omitempty"`
	Metadata           map[string]any `json:"metadata,omitempty"`
	Labels             []string       `json:"labels,omitempty"`
	Dependencies       []dep          `json:"dependencies,omitempty"`
}

type db struct {
	Issues []*issue `json:"issues"`
	path   string
}

func (d *db) get(id string) *issue {
	for _, is := range d.Issues {
		if is.ID == id {
			return is
		}
	}
	return nil
}

func (d *db) save() {
	b, err := json.Marshal(d)
	if err != nil {
		fatal("Error: %v", err)
	}
	tmp := d.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		fatal("Error: %v", err)
	}
	if err := os.Rename(tmp, d.path); err != nil {
		fatal("Error: %v", err)
	}
}

func fatal(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(1)
}

// fatalJSON is bd's FatalErrorRespectJSON: the error as JSON on stdout.
func fatalJSON(msg string) {
	out(map[string]any{"error": msg})
	os.Exit(1)
}

// out prints v; objects get schema_version and sorted keys, like bd.
func out(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fatal("Error: %v", err)
	}
	if len(b) > 0 && b[0] == '{' {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		m["schema_version"] = 1
		b, _ = json.Marshal(m)
	}
	os.Stdout.Write(append(b, '\n'))
}

var now = time.Now().UTC()

// sec mimics values read back from the database: second precision.
func sec(t time.Time) time.Time { return t.Truncate(time.Second) }

type flags struct {
	vals map[string][]string
	pos  []string
}

var boolFlags = map[string]bool{"json": true, "suggest-next": true, "claim": true, "all": true, "force": true, "include-deferred": true, "silent": true, "unassigned": true}
var short = map[string]string{"p": "priority", "t": "type", "d": "description", "l": "labels", "a": "assignee", "s": "status", "n": "limit", "r": "reason", "m": "reason"}

func parse(args []string) flags {
	f := flags{vals: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			f.pos = append(f.pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			f.pos = append(f.pos, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		val, hasVal := "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, val, hasVal = k, v, true
		}
		if !strings.HasPrefix(a, "--") {
			if long, ok := short[name]; ok {
				name = long
			}
		}
		if boolFlags[name] {
			f.vals[name] = append(f.vals[name], "true")
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				fatal("Error: flag needs an argument: %s", a)
			}
			i++
			val = args[i]
		}
		f.vals[name] = append(f.vals[name], val)
	}
	return f
}

func (f flags) has(k string) bool { _, ok := f.vals[k]; return ok }
func (f flags) get(k string) string {
	v := f.vals[k]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func actor(f flags) string {
	for _, v := range []string{f.get("actor"), os.Getenv("BEADS_ACTOR"), os.Getenv("BD_ACTOR"), os.Getenv("USER")} {
		if v != "" {
			return v
		}
	}
	return "unknown"
}

func main() {
	if os.Getenv("FAKEBD_SLEEPER") != "" {
		time.Sleep(24 * time.Hour)
		return
	}
	if c := os.Getenv("FAKEBD_COUNT"); c != "" {
		f, err := os.OpenFile(c, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			sub := ""
			if len(os.Args) > 1 {
				sub = os.Args[1]
			}
			fmt.Fprintln(f, sub)
			f.Close()
		}
	}
	if fifo := os.Getenv("FAKEBD_HANG"); fifo != "" {
		hang(fifo)
	}
	if os.Getenv("FAKEBD_QUIET") == "" {
		fmt.Fprintln(os.Stderr, "warning: beads.role not configured (GH#2950)")
	}
	if len(os.Args) < 2 {
		fatal("Error: no command")
	}
	sub, rest := os.Args[1], os.Args[2:]
	if sub == "version" {
		fmt.Println("bd version 1.0.3 (fakebd)")
		return
	}
	dir := os.Getenv("BEADS_DIR")
	if dir == "" {
		fatal("Error: no beads database found")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal("Error: %v", err)
	}
	lk, err := os.OpenFile(filepath.Join(dir, "fakebd.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		fatal("Error: %v", err)
	}
	if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_EX); err != nil {
		fatal("Error: %v", err)
	}
	d := &db{path: filepath.Join(dir, "fakebd.json")}
	if b, err := os.ReadFile(d.path); err == nil {
		if err := json.Unmarshal(b, d); err != nil {
			fatal("Error: failed to open database: %v", err)
		}
	}
	f := parse(rest)
	switch sub {
	case "create":
		create(d, f, dir)
	case "show":
		show(d, f)
	case "list":
		list(d, f)
	case "ready":
		ready(d, f)
	case "update":
		update(d, f)
	case "close":
		closeCmd(d, f)
	case "reopen":
		reopen(d, f)
	case "dep":
		depCmd(d, f)
	case "label":
		label(d, f)
	case "delete":
		deleteCmd(d, f)
	default:
		fatal("Error: unknown command %q for \"bd\"", sub)
	}
}

func hang(fifo string) {
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "FAKEBD_SLEEPER=1")
	if err := child.Start(); err != nil {
		fatal("Error: %v", err)
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err == nil {
		fmt.Fprintf(f, "%d\n", child.Process.Pid)
		f.Close()
	}
	time.Sleep(24 * time.Hour)
}

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
