// Package driver holds the merge drivers Chorus registers with git for files
// that every task touches: the shared learnings file, the Beads JSONL task
// store and lock files. git runs them as `<command> <kind> %O %A %B %P`; the
// result goes into %A and the exit status says clean (0) or conflict (1).
// They are plain functions over bytes so they can be tested without git.
package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Kinds of driver, the first argument on the command line.
const (
	Learnings = "learnings" // append both sides, drop duplicate lines
	JSONL     = "jsonl"     // line set keyed by the "id" field
	Lock      = "lock"      // keep ours; Chorus regenerates the file afterwards
)

// Main runs one driver from a command line (kind, base, ours, theirs, path)
// and returns the process exit status.
func Main(args []string) int {
	if len(args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: merge-driver learnings|jsonl|lock BASE OURS THEIRS [PATH]")
		return 2
	}
	kind, basePath, oursPath, theirsPath := args[0], args[1], args[2], args[3]
	if kind == Lock {
		// %A already holds ours; the service regenerates the file from the
		// merged manifest before the candidate is tested.
		return 0
	}
	base, err1 := os.ReadFile(basePath)
	ours, err2 := os.ReadFile(oursPath)
	theirs, err3 := os.ReadFile(theirsPath)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			fmt.Fprintln(os.Stderr, "merge-driver:", err)
			return 2
		}
	}
	var out []byte
	var conflicts []string
	switch kind {
	case Learnings:
		out = MergeLearnings(base, ours, theirs)
	case JSONL:
		out, conflicts = MergeJSONL(base, ours, theirs)
	default:
		fmt.Fprintln(os.Stderr, "merge-driver: unknown kind", kind)
		return 2
	}
	if len(conflicts) > 0 {
		// Leave %A as ours: git reports the path as conflicted and the
		// resolver sees both versions.
		fmt.Fprintf(os.Stderr, "merge-driver: records changed on both sides: %s\n", strings.Join(conflicts, ", "))
		return 1
	}
	if err := os.WriteFile(oursPath, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "merge-driver:", err)
		return 2
	}
	return 0
}

func lines(b []byte) []string {
	s := string(b)
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// MergeLearnings keeps ours and appends the entries theirs added since
// base, skipping non-blank entries ours already has. An entry is a line
// with the indented lines under it (a learning and its "  Source: …"
// line), so two learnings of one task keep a Source line each. Learnings
// are append-only notes, so an entry either side deleted is not
// resurrected from base.
func MergeLearnings(base, ours, theirs []byte) []byte {
	baseSet := map[string]int{}
	for _, u := range units(lines(base)) {
		baseSet[u]++
	}
	have := map[string]bool{}
	for _, u := range units(lines(ours)) {
		have[u] = true
	}
	var add []string
	for _, u := range units(lines(theirs)) {
		if baseSet[u] > 0 {
			baseSet[u]--
			continue
		}
		if strings.TrimSpace(u) != "" && have[u] {
			continue
		}
		have[u] = true
		add = append(add, u)
	}
	// Blank lines only separate sections; never end on a pile of them.
	for len(add) > 0 && strings.TrimSpace(add[len(add)-1]) == "" {
		add = add[:len(add)-1]
	}
	var b bytes.Buffer
	for _, l := range lines(ours) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	for _, u := range add {
		b.WriteString(u)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// units groups lines into entries: an indented non-blank line belongs to
// the entry above it.
func units(ls []string) []string {
	var out []string
	for _, l := range ls {
		if len(out) > 0 && strings.TrimSpace(l) != "" && (l[0] == ' ' || l[0] == '\t') && strings.TrimSpace(out[len(out)-1]) != "" {
			out[len(out)-1] += "\n" + l
			continue
		}
		out = append(out, l)
	}
	return out
}

type record struct {
	key  string
	norm string // canonical form, so whitespace changes are not edits
	line string
}

func parseJSONL(b []byte) ([]record, map[string]record) {
	var list []record
	byKey := map[string]record{}
	for _, l := range lines(b) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		r := record{line: l, norm: strings.TrimSpace(l)}
		var obj map[string]any
		if json.Unmarshal([]byte(l), &obj) == nil {
			if c, err := json.Marshal(obj); err == nil {
				r.norm = string(c)
			}
			if id, ok := obj["id"].(string); ok && id != "" {
				r.key = "id:" + id
			}
		}
		if r.key == "" {
			// Lines without an id form a plain set.
			r.key = "line:" + r.norm
		}
		if _, dup := byKey[r.key]; dup {
			continue
		}
		byKey[r.key] = r
		list = append(list, r)
	}
	return list, byKey
}

// MergeJSONL merges a JSONL record store as a set of records keyed by "id":
// a record changed or deleted on one side takes that side's version, a
// record added on either side is kept once, and a record changed differently
// on both sides is a conflict (its key is returned) rather than two lines.
func MergeJSONL(base, ours, theirs []byte) ([]byte, []string) {
	_, b := parseJSONL(base)
	ol, o := parseJSONL(ours)
	tl, t := parseJSONL(theirs)
	pick := func(key string) (record, bool, bool) { // result, present, conflict
		br, inB := b[key]
		or, inO := o[key]
		tr, inT := t[key]
		same := func(x record, inX bool, y record, inY bool) bool {
			return inX == inY && (!inX || x.norm == y.norm)
		}
		switch {
		case same(or, inO, tr, inT):
			return or, inO, false
		case same(or, inO, br, inB):
			return tr, inT, false
		case same(tr, inT, br, inB):
			return or, inO, false
		}
		return record{}, false, true
	}
	var out bytes.Buffer
	var conflicts []string
	seen := map[string]bool{}
	emit := func(list []record) {
		for _, r := range list {
			if seen[r.key] {
				continue
			}
			seen[r.key] = true
			res, present, conflict := pick(r.key)
			if conflict {
				conflicts = append(conflicts, strings.TrimPrefix(r.key, "id:"))
				continue
			}
			if present {
				out.WriteString(res.line)
				out.WriteByte('\n')
			}
		}
	}
	emit(ol)
	emit(tl)
	return out.Bytes(), conflicts
}
