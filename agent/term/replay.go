package term

import (
	"fmt"
	"io"
)

// Replay feeds the first at bytes of r (all of it when at < 0) to a fresh
// w×h emulator and returns the screen text. It is what `chorus replay
// --print` prints.
func Replay(r io.Reader, w, h int, at int64) (string, error) {
	e := New(w, h)
	if at >= 0 {
		r = io.LimitReader(r, at)
	}
	if _, err := io.Copy(e, r); err != nil {
		return "", fmt.Errorf("replay: %w", err)
	}
	return e.Text(), nil
}
