// Command fakebd is a stand-in for the beads `bd` CLI, for tests on machines
// without bd. It follows the measured contract in docs/beads-cli.md for the
// commands Chorus uses: output shapes (objects carry schema_version, show
// returns an array with full dependency objects, create echoes no labels or
// deps), exit codes, stderr texts, compare-and-swap claims, and dependency
// failures that are only warnings with exit 0, and bd 1.0.5's `label
// add|remove` on a missing id (error on stderr, `[]`, exit 0), and `kv
// set|get|clear|list`. Data lives in $BEADS_DIR/fakebd.json.
//
// FAKEBD_LOCK picks how concurrent commands meet, like the real backends:
// unset, every command holds an flock on $BEADS_DIR/fakebd.lock (bd v1.0.x
// embedded); "none", no lock at all (bd 1.0.4+ embedded: a write can
// overwrite another's); "server", a shared Dolt server's optimistic
// transactions: nothing is held while a command works, and a write whose
// data changed since it read fails with Dolt's Error 1213 serialization
// failure (rc 1), writing nothing. FAKEBD_WINDOW=<ms> waits between the read
// and the write, so races happen on a quiet machine too. FAKEBD_1213=<file>
// holding a number N makes the next N writes fail with 1213 (any mode).
// FAKEBD_DATA=<dir> keeps the data there instead of $BEADS_DIR, so several
// clones share one database, as they do on a server.
//
// Test hooks: FAKEBD_COUNT=<file> appends one line per invocation;
// FAKEBD_HANG=<fifo> starts a child in the same process group, writes its
// pid to the fifo and hangs; FAKEBD_QUIET=1 drops the stderr warning every
// call otherwise prints; FAKEBD_CLAIM_RACE=<actor> makes `update --claim`
// report success while storing <actor> as the assignee.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	Issues []*issue          `json:"issues"`
	KV     map[string]string `json:"kv,omitempty"`
	// Version counts writes; the server mode's conflict check.
	Version int `json:"version"`
	path    string
	read    int // Version when this command read the data
}

func (d *db) get(id string) *issue {
	for _, is := range d.Issues {
		if is.ID == id {
			return is
		}
	}
	return nil
}

// errSerialization is what bd prints when Dolt refuses a commit.
const errSerialization = "Error: failed to update: Error 1213 (40001): serialization failure: this transaction conflicts with a committed transaction; retry the transaction"

func (d *db) save() {
	if n := os.Getenv("FAKEBD_WINDOW"); n != "" {
		ms, _ := strconv.Atoi(n)
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	mode := os.Getenv("FAKEBD_LOCK")
	if mode == "server" {
		unlock := lockDir(filepath.Dir(d.path))
		defer unlock()
		var cur db
		if b, err := os.ReadFile(d.path); err == nil {
			_ = json.Unmarshal(b, &cur)
		}
		if cur.Version != d.read {
			fatal("%s", errSerialization)
		}
	}
	if injected1213(filepath.Dir(d.path), mode == "") {
		fatal("%s", errSerialization)
	}
	d.Version = d.read + 1
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
	d.read = d.Version // a second save in one command is no conflict
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
	if d := os.Getenv("FAKEBD_DATA"); d != "" {
		dir = d // one database for several clones, as a server is
	}
	if dir == "" {
		fatal("Error: no beads database found")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal("Error: %v", err)
	}
	if os.Getenv("FAKEBD_LOCK") == "" {
		lockDir(dir) // held until the process exits
	}
	d := &db{path: filepath.Join(dir, "fakebd.json")}
	if b, err := os.ReadFile(d.path); err == nil {
		if err := json.Unmarshal(b, d); err != nil {
			fatal("Error: failed to open database: %v", err)
		}
	}
	d.read = d.Version
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
	case "kv":
		kvCmd(d, f)
	default:
		fatal("Error: unknown command %q for \"bd\"", sub)
	}
}

// lockDir takes the exclusive lock on dir's fakebd.lock.
func lockDir(dir string) func() {
	lk, err := os.OpenFile(filepath.Join(dir, "fakebd.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		fatal("Error: %v", err)
	}
	if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_EX); err != nil {
		fatal("Error: %v", err)
	}
	return func() { lk.Close() }
}

// injected1213 takes one from the count in $FAKEBD_1213, if any is left.
// locked: the caller already holds the directory's lock.
func injected1213(dir string, locked bool) bool {
	p := os.Getenv("FAKEBD_1213")
	if p == "" {
		return false
	}
	if !locked && os.Getenv("FAKEBD_LOCK") != "server" {
		defer lockDir(dir)()
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if n <= 0 {
		return false
	}
	_ = os.WriteFile(p, []byte(strconv.Itoa(n-1)), 0o644)
	return true
}

func kvCmd(d *db, f flags) {
	if len(f.pos) == 0 {
		fatal("Error: kv needs a subcommand")
	}
	switch op, args := f.pos[0], f.pos[1:]; {
	case op == "set" && len(args) == 2:
		if d.KV == nil {
			d.KV = map[string]string{}
		}
		d.KV[args[0]] = args[1]
		d.save()
		out(map[string]any{"key": args[0], "value": args[1]})
	case op == "get" && len(args) == 1:
		v := d.KV[args[0]]
		out(map[string]any{"key": args[0], "value": v, "found": v != ""})
		if v == "" {
			os.Exit(1)
		}
	case op == "clear" && len(args) == 1:
		delete(d.KV, args[0])
		d.save()
		out(map[string]any{"key": args[0], "deleted": "true"})
	case op == "list":
		// bd 1.0.5 puts schema_version among the pairs.
		kv := map[string]any{"schema_version": 1}
		for k, v := range d.KV {
			kv[k] = v
		}
		b, _ := json.Marshal(kv)
		os.Stdout.Write(append(b, '\n'))
	default:
		fatal("Error: unknown kv command %q", op)
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
