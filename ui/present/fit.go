package present

import "github.com/chorus-dev/chorus/agent/term"

// HeaderTail is the end of the header that Fit never cuts.
func HeaderTail() Line { return Line{{" │ ", Dim}, {"? help", Dim}} }

// Width is the line's width in cells.
func (l Line) Width() int {
	n := 0
	for _, s := range l {
		n += term.StringWidth(s.Text)
	}
	return n
}

// Cut names a part Fit may cut, and how much of it to keep at this step.
type Cut struct{ Part, Keep int }

// Fit joins parts, in order, in w cells: while they are too wide, the
// first Cut's part is cut at its end (with "…") down to at most its Keep
// cells, then the next Cut's. A part no Cut names is never cut.
func Fit(w int, parts []Line, order ...Cut) Line {
	cuts := make([]Line, len(parts))
	copy(cuts, parts)
	total := 0
	for _, p := range parts {
		total += p.Width()
	}
	for _, c := range order {
		if total <= w {
			break
		}
		cur := cuts[c.Part].Width()
		keep := max(c.Keep, cur-(total-w))
		if keep < 4 {
			keep = 0 // " …" alone says nothing
		}
		if keep >= cur {
			continue
		}
		cuts[c.Part] = cut(cuts[c.Part], keep)
		total -= cur - cuts[c.Part].Width()
	}
	var out Line
	for _, p := range cuts {
		out = append(out, p...)
	}
	return out
}

// cut is l in at most w cells, ending in "…" when it was longer.
func cut(l Line, w int) Line {
	if l.Width() <= w {
		return l
	}
	if w <= 0 {
		return nil
	}
	var out Line
	used := 0
	for _, s := range l {
		sw := term.StringWidth(s.Text)
		if used+sw <= w-1 {
			out = append(out, s)
			used += sw
			continue
		}
		out = append(out, Seg{term.Truncate(s.Text, w-used, "…"), s.Class})
		break
	}
	return out
}
