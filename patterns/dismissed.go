package patterns

import (
	"os"
	"sort"
	"strings"

	"github.com/chorus-dev/chorus/chorusdir"
)

// DismissedFile is where dismissed suggestion ids are kept, under .chorus/.
const DismissedFile = "patterns-dismissed"

// ReadDismissed reads the dismissed ids, one a line (none when the file is
// missing).
func ReadDismissed(path string) map[string]bool {
	b, _ := os.ReadFile(path)
	out := map[string]bool{}
	for _, f := range strings.Fields(string(b)) {
		out[f] = true
	}
	return out
}

// Dismiss adds id to the dismissed file.
func Dismiss(path, id string) error {
	d := ReadDismissed(path)
	d[id] = true
	ids := make([]string, 0, len(d))
	for k := range d {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	return chorusdir.WriteAtomic(path, []byte(strings.Join(ids, "\n")+"\n"), 0o600)
}
