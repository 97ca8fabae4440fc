package present

import (
	"fmt"
	"strconv"
	"strings"
)

// Rect is a cell of the agent grid, relative to the grid's area.
type Rect struct{ X, Y, W, H int }

// MinTileHeight is the smallest tile auto layout makes (border plus four
// lines); more agents than fit go to further pages.
const MinTileHeight = 6

// GridLayouts are what `g` cycles through, after the configured one.
var GridLayouts = []string{"auto", "1x1", "2x1", "2x2", "3x2", "3x3", "1x4", "4x2"}

// ParseGrid reads "auto" (0, 0) or "CxR": C columns, R rows.
func ParseGrid(s string) (cols, rows int, err error) {
	if s == "" || s == "auto" {
		return 0, 0, nil
	}
	c, r, ok := strings.Cut(s, "x")
	cols, err1 := strconv.Atoi(c)
	rows, err2 := strconv.Atoi(r)
	if !ok || err1 != nil || err2 != nil || cols < 1 || rows < 1 || cols > 9 || rows > 9 {
		return 0, 0, fmt.Errorf("grid %q is not valid; use auto or COLSxROWS such as 2x2", s)
	}
	return cols, rows, nil
}

// NextGrid is the layout after cur in the cycle.
func NextGrid(cur string) string {
	for i, g := range GridLayouts {
		if g == cur {
			return GridLayouts[(i+1)%len(GridLayouts)]
		}
	}
	return GridLayouts[0]
}

// AutoColumns is the seed's auto-fit rule on the terminal width: under
// 120 one column, under 180 two, else one per 60 columns (at least 3).
func AutoColumns(termWidth int) int {
	switch {
	case termWidth < 120:
		return 1
	case termWidth < 180:
		return 2
	}
	return max(3, termWidth/60)
}

// Grid is the placement of tiles for one frame.
type Grid struct {
	Cols, Rows int
	First      int    // slot shown in the first cell (paging)
	Slots      int    // agents plus empty slots
	Cells      []Rect // visible cells, slot First+i in Cells[i]
}

// Layout places agents in a w×h area. spec is "auto" or "CxR"; termWidth
// drives auto. Auto gives the agents the whole area (empty slots take no
// space: one agent gets the grid); a fixed CxR keeps empty slots up to
// maxParallel. The page shown is the one holding slot selected.
func Layout(spec string, termWidth, w, h, agents, maxParallel, selected int) Grid {
	slots := max(agents, 1)
	cols, rows, err := ParseGrid(spec)
	if err == nil && cols > 0 {
		slots = max(agents, maxParallel, 1)
	} else {
		cols = min(AutoColumns(termWidth), slots)
		rows = (slots + cols - 1) / cols
		rows = min(rows, max(1, h/MinTileHeight))
	}
	g := Grid{Cols: cols, Rows: rows, Slots: slots}
	if w <= 0 || h <= 0 {
		return g
	}
	capacity := cols * rows
	if selected > 0 {
		g.First = selected / capacity * capacity
	}
	n := min(capacity, slots-g.First)
	for i := range n {
		c, r := i%cols, i/cols
		x0, x1 := c*w/cols, (c+1)*w/cols
		y0, y1 := r*h/rows, (r+1)*h/rows
		g.Cells = append(g.Cells, Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0})
	}
	return g
}
