package app

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/beads"
)

// bdRebuild is doctor's answer to a corrupted bd database: what holds the
// tasks, and the commands that rebuild the database from the JSONL export
// with the broken one kept aside (nothing is deleted).
func bdRebuild(root, beadsDir string, cause error, now time.Time) string {
	jsonl := filepath.Join(beadsDir, "issues.jsonl")
	n, mod := jsonlTasks(jsonl)
	var b strings.Builder
	why := oneLine(cause)
	var be *beads.BdError
	if errors.As(cause, &be) {
		why = strings.ReplaceAll(be.Msg, "\n", "; ") // without the hint that sends here
	}
	fmt.Fprintf(&b, "bd cannot open its database, which looks corrupted (%s)\n", why)
	if n == 0 {
		fmt.Fprintf(&b, "    %s holds no tasks to rebuild from: keep the database as it is and try `bd doctor --fix`, or restore .beads/ from a backup\n", rel(root, jsonl))
		return b.String()
	}
	fmt.Fprintf(&b, "    nothing is lost: %s holds %d tasks (written %s); to rebuild from it:\n", rel(root, jsonl), n, mod.Local().Format("2006-01-02 15:04"))
	b.WriteString("    1. `chorus stop` if an engine runs\n")
	suffix := ".corrupt-" + now.UTC().Format("20060102T150405Z")
	var moved []string
	for _, name := range []string{"embeddeddolt", "dolt", "metadata.json"} {
		if _, err := os.Lstat(filepath.Join(beadsDir, name)); err == nil {
			p := rel(root, filepath.Join(beadsDir, name))
			moved = append(moved, fmt.Sprintf("mv %s %s", p, p+suffix))
		}
	}
	fmt.Fprintf(&b, "    2. keep the broken database aside: %s\n", strings.Join(moved, " && "))
	fmt.Fprintf(&b, "    3. `bd init --from-jsonl` (bd rebuilds its database from %s); or skip it: with no bd database in .beads/, Chorus uses its built-in store on that file\n", rel(root, jsonl))
	b.WriteString("    4. `chorus doctor` again, then `chorus task list` to see the tasks")
	return b.String()
}

// jsonlTasks counts the task lines of a JSONL export and says when it was
// written (0 when it is missing or empty).
func jsonlTasks(p string) (int, time.Time) {
	f, err := os.Open(p)
	if err != nil {
		return 0, time.Time{}
	}
	defer f.Close()
	st, _ := f.Stat()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"id"`) {
			n++
		}
	}
	return n, st.ModTime()
}
