package transcript

import (
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Follow reads r while the agent runs and once more when done closes,
// handing each non-empty update to report. It is woken by inotify when a
// record is written, so an idle agent costs nothing; folders that do not
// exist yet (the CLI makes them with its first message) are watched
// through their nearest existing parent. Without inotify it reads every
// few seconds.
func Follow(r *Reader, done <-chan struct{}, report func(Update)) {
	read := func() {
		if up := r.Read(); !up.IsZero() {
			report(up)
		}
	}
	final := func() {
		if up := r.Final(); !up.IsZero() {
			report(up)
		}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				read()
			case <-done:
				final()
				return
			}
		}
	}
	defer w.Close()
	watched := map[string]bool{}
	watch := func() {
		// A folder made between a look and its watch sends no event: look
		// again until a pass adds no watch.
		for added := true; added; {
			added = false
			for _, d := range r.src.watchDirs() {
				p := nearest(d)
				if !watched[p] && w.Add(p) == nil {
					watched[p] = true
					added = true
				}
			}
		}
	}
	watch()
	read()
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) {
				watch() // a record folder may have appeared
			}
			read()
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			watch() // events were lost; the files were not
			read()
		case <-done:
			final()
			return
		}
	}
}

// nearest is d or its closest existing ancestor.
func nearest(d string) string {
	p := d
	for {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}
