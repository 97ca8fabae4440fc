package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
)

// Where a report's period starts (Report.From).
const (
	FromReport = "report" // the end of the last report read with `chorus report`
	FromUnread = "unread" // the start of the last report written at a run's end, not yet read
	FromLog    = "log"    // no report yet: the session log's beginning
	FromSince  = "since"  // the time asked for (--since)
)

// Mark is what the last report covered, kept in .chorus/reports/last.json
// so the next one starts where it ended ("since the last report").
type Mark struct {
	ProducedAt time.Time `json:"producedAt"`
	// Shown: a person asked for it (`chorus report`); a report written at
	// the end of a run is not, and the next report covers its period again.
	Shown       bool      `json:"shown"`
	Since       time.Time `json:"since"`
	SinceOffset int64     `json:"sinceOffset"` // byte offset in the session log, -1 when by time
	Until       time.Time `json:"until"`
	UntilOffset int64     `json:"untilOffset"`
}

// MarkPath is where the mark is kept.
func MarkPath(d chorusdir.Dir) string { return filepath.Join(d.Path, "reports", "last.json") }

// LoadMark reads the mark; ok is false when no report was recorded yet.
func LoadMark(d chorusdir.Dir) (m Mark, ok bool, err error) {
	b, err := os.ReadFile(MarkPath(d))
	if errors.Is(err, fs.ErrNotExist) {
		return Mark{}, false, nil
	}
	if err != nil {
		return Mark{}, false, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		// A mark that cannot be read loses only the default period.
		return Mark{}, false, nil
	}
	return m, true, nil
}

// Record keeps r's period as the last report's; shown says a person asked
// for it. A report for a period asked with --since is not recorded.
func Record(d chorusdir.Dir, r Report, shown bool) error {
	if r.From == FromSince {
		return nil
	}
	m := Mark{ProducedAt: time.Now().UTC(), Shown: shown, Since: r.Since, SinceOffset: r.sinceOffset, Until: r.Until, UntilOffset: r.logEnd}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(MarkPath(d)), chorusdir.DirMode); err != nil {
		return err
	}
	return chorusdir.WriteAtomic(MarkPath(d), append(b, '\n'), chorusdir.FileMode)
}

// period is where a report starts.
type period struct {
	since  time.Time
	offset int64 // -1: by time
	from   string
	last   time.Time // when the last report was produced
}

// defaultPeriod starts after the last report read by a person; when the
// reports since were only written at the end of runs, at the start of the
// first of them (nobody has read the night yet); without any, at the
// beginning of the log.
func defaultPeriod(d chorusdir.Dir) (period, error) {
	m, ok, err := LoadMark(d)
	if err != nil {
		return period{}, err
	}
	switch {
	case !ok:
		return period{offset: 0, from: FromLog}, nil
	case m.Shown:
		return period{since: m.Until, offset: m.UntilOffset, from: FromReport, last: m.ProducedAt}, nil
	default:
		return period{since: m.Since, offset: m.SinceOffset, from: FromUnread, last: m.ProducedAt}, nil
	}
}

// ReadLog reads the session log; lines it cannot parse are skipped (the
// log is appended by several processes and may end mid-line after a kill).
func ReadLog(path string) ([]chorusdir.Entry, error) {
	out, _, _, err := readLogFrom(path, 0)
	return out, err
}

// readLogFrom reads the session log from byte offset on, up to its last
// complete line, whose end it returns. When offset is past the end (the
// log was replaced), it reads from the start and says so (byTime).
func readLogFrom(path string, offset int64) (out []chorusdir.Entry, end int64, byTime bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, offset > 0, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	if offset < 0 || offset > st.Size() {
		offset, byTime = 0, true
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, 0, false, err
	}
	end = offset
	r := bufio.NewReaderSize(f, 64*1024)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			end += int64(len(line))
			var e chorusdir.Entry
			if json.Unmarshal(bytes.TrimSpace(line), &e) == nil {
				out = append(out, e)
			}
		}
		if err == io.EOF {
			return out, end, byTime, nil
		}
		if err != nil {
			return nil, 0, false, err
		}
	}
}
