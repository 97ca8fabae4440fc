package signal

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// Found is one tag the Detector counted. Err is set (wrapping
// ErrUnknownType or ErrMalformed) when the tag's content is not a valid
// signal; callers log those and carry on.
type Found struct {
	Signal Signal
	Err    error
	Raw    string // the tag as it appeared, whitespace collapsed
}

// DetectorOptions configure a Detector.
type DetectorOptions struct {
	// Prompts are the texts sent to the agent. A tag that is part of an
	// echo of one of them never counts. More can be added with AddPrompt.
	Prompts []string
	// Context is how many preceding non-blank lines identify an occurrence
	// (default 2).
	Context int
}

// Detector finds <chorus>TYPE[: payload]</chorus> tags in an agent's
// terminal text, counting each occurrence once.
//
// It takes plain text (escape sequences already interpreted), either as
// whole snapshots of scrollback plus screen (Snapshot) or as a stream
// (Append). Four rules decide what counts:
//
// Placement. A screen does not tell the assistant's words from a tool's
// output or a displayed file, nor when a turn ends, so the rule is
// stricter than InMessage's: a tag counts only alone on its line
// (AloneOnLine), outside fenced code blocks. Fences are followed within
// one Snapshot call, and across Append calls.
//
// Echo suppression. Interactive agents echo the prompt, and the prompt
// names the tags. A tag is ignored when its line begins with an input
// marker ('>', '›', '❯': how Claude Code and Codex show the user's
// message), or when its line, taken together with the nearest non-blank
// line above or below it, is a piece of a prompt. Lines are compared with
// all whitespace removed and leading UI bullets dropped, so the prompt's
// re-wrapping at the terminal width and the echo's indentation do not
// matter. An agent printing the bare tag on its own line is not a piece
// of the prompt once its neighbours (the agent's own words) are included.
// An echo whose rows a narrowed terminal has cut short (the emulator does
// not reflow) is still an echo: lines that are each a piece of one prompt,
// in order, with a little text missing between them.
//
// Deduplication. TUIs repaint the same lines many times, and snapshots
// repeat everything, so an occurrence is identified by its content plus
// the normalised text of the Context non-blank lines before it. A repaint
// has the same identity and is ignored; a COMPLETE in a later turn follows
// different text and counts. Near the top of a snapshot, where those lines
// have scrolled away, a partial identity matches any earlier occurrence
// it is a suffix of. Identities seen are remembered, echoes included, so
// an echo whose prompt context has scrolled off still never counts.
//
// Turns. Within one turn each distinct signal counts once, whatever its
// context (a backstop for repaints that garble the lines around it). Call
// Reset when a new turn starts (feedback typed into the agent), so the same
// signal can count again.
//
// A Detector is not safe for concurrent use.
type Detector struct {
	k       int
	prompts []string // normalised

	seen     []occKey
	seenSet  map[string]bool
	turnSeen map[string]bool

	// stream state for Append
	partial string
	hist    []string // recent complete lines
	base    int      // stream line number of hist[0]
	next    int      // first stream line not yet scanned for tags
	fence   fence    // code fences of the stream, up to next
}

type occKey struct {
	content string
	ctx     []string // oldest first
}

func (k occKey) id() string { return k.content + "\x00" + strings.Join(k.ctx, "\x00") }

const (
	maxSeen  = 4096
	histKeep = 64
	tagSpan  = 4 // lines a tag may be wrapped over
)

// NewDetector returns a Detector.
func NewDetector(opts DetectorOptions) *Detector {
	d := &Detector{k: opts.Context, seenSet: map[string]bool{}, turnSeen: map[string]bool{}}
	if d.k <= 0 {
		d.k = 2
	}
	for _, p := range opts.Prompts {
		d.AddPrompt(p)
	}
	return d
}

// AddPrompt registers more text sent to the agent (feedback, a follow-up),
// whose echo must not count either. Call it before typing the text.
func (d *Detector) AddPrompt(text string) {
	var b strings.Builder
	for _, l := range splitLines(text) {
		b.WriteString(norm(l, true))
	}
	if s := b.String(); s != "" {
		d.prompts = append(d.prompts, s)
	}
}

// Reset starts a new turn: signals seen so far may count again when they
// appear anew (with different surrounding text). Repaints of earlier
// occurrences still do not count.
func (d *Detector) Reset() { d.turnSeen = map[string]bool{} }

// Snapshot scans a complete text (scrollback plus screen) and returns the
// tags that had not been counted before.
func (d *Detector) Snapshot(text string) []Found {
	lines := splitLines(text)
	fenced := fencedLines(lines)
	var out []Found
	for i := range lines {
		if !fenced[i] {
			out = d.scanLine(lines, i, false, true, out)
		}
	}
	return out
}

// Append scans streamed text; a tag split across calls is found once it is
// complete. Text after the last newline waits for the next call or Flush.
func (d *Detector) Append(text string) []Found {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	parts := strings.Split(d.partial+text, "\n")
	d.partial = parts[len(parts)-1]
	d.hist = append(d.hist, parts[:len(parts)-1]...)
	return d.scanStream(false)
}

// Flush treats pending text as a complete line (the stream ended) and
// scans what is left.
func (d *Detector) Flush() []Found {
	if d.partial != "" {
		d.hist = append(d.hist, d.partial)
		d.partial = ""
	}
	return d.scanStream(true)
}

func (d *Detector) scanStream(final bool) []Found {
	var out []Found
	for d.next < d.base+len(d.hist) {
		i := d.next - d.base
		if !final && !d.lineReady(d.hist, i) {
			break
		}
		if !d.fence.line(d.hist[i]) {
			out = d.scanLine(d.hist, i, d.base == 0, false, out)
		}
		d.next++
	}
	// Keep enough history for context and wrapped tags.
	if drop := len(d.hist) - histKeep; drop > 0 && d.next-d.base > drop {
		d.hist = append([]string(nil), d.hist[drop:]...)
		d.base += drop
	}
	return out
}

// lineReady reports whether every tag starting on line i can be judged:
// it closes within the lines present, or the lines it may span are all
// present.
func (d *Detector) lineReady(lines []string, i int) bool {
	if i+tagSpan <= len(lines) {
		return true
	}
	for _, col := range tagStarts(lines[i]) {
		if _, _, _, ok := matchAt(lines, i, col); !ok {
			return false
		}
	}
	return true
}

var openTag = "<chorus>"

func tagStarts(line string) []int {
	var cols []int
	for off := 0; ; {
		j := strings.Index(line[off:], openTag)
		if j < 0 {
			return cols
		}
		cols = append(cols, off+j)
		off += j + len(openTag)
	}
}

// tagRe is compiled on first use: the bounded repetition makes it large,
// and every chorus command (not only the engine) would pay for it at start.
var tagRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^<chorus>((?s:.{0,1000}?))</chorus>`) })

// matchAt matches a tag starting at lines[i][col], possibly wrapped over the
// following lines. It returns the inner text, the last line's index and the
// column just past the tag on that line.
func matchAt(lines []string, i, col int) (inner string, endLine, endCol int, ok bool) {
	end := min(i+tagSpan, len(lines))
	window := lines[i][col:]
	if end > i+1 {
		window += "\n" + strings.Join(lines[i+1:end], "\n")
	}
	m := tagRe().FindStringSubmatchIndex(window)
	if m == nil {
		return "", 0, 0, false
	}
	inner = window[m[2]:m[3]]
	if strings.Contains(inner, openTag) {
		return "", 0, 0, false
	}
	matched := window[:m[1]]
	nl := strings.Count(matched, "\n")
	endLine = i + nl
	if nl == 0 {
		endCol = col + m[1]
	} else {
		endCol = len(matched) - strings.LastIndexByte(matched, '\n') - 1
	}
	return inner, endLine, endCol, true
}

// scanLine judges the tags that start on lines[i] and appends the ones that
// count. atStart says lines[0] is the true beginning of the output;
// lookAhead allows the line below to be used for echo detection.
func (d *Detector) scanLine(lines []string, i int, atStart, lookAhead bool, out []Found) []Found {
	for _, col := range tagStarts(lines[i]) {
		inner, endLine, endCol, ok := matchAt(lines, i, col)
		if !ok {
			continue
		}
		before, after := lines[i][:col], lines[endLine][endCol:]
		raw := collapse(lines[i][col:])
		if endLine > i {
			raw = collapse(lines[i][col:] + " " + strings.Join(lines[i+1:endLine], " ") + " " + lines[endLine][:endCol])
		}
		sig, err := Parse(strings.ReplaceAll(inner, "\n", " "))
		content := string(sig.Type) + ":" + sig.Payload
		if err != nil && sig.Type == "" {
			content = "?" + collapse(inner)
		}
		key, complete := d.identity(lines, i, before, content, atStart)

		skip := isInputLine(before) ||
			!AloneOnLine(before, after) ||
			d.isEcho(lines, i, endLine, lookAhead)
		if skip || d.alreadySeen(key, complete) || d.turnSeen[content] {
			d.remember(key)
			continue
		}
		d.remember(key)
		d.turnSeen[content] = true
		out = append(out, Found{Signal: sig, Err: err, Raw: raw})
	}
	return out
}

// identity builds an occurrence's key from its content and the non-blank
// lines above it; complete is false when fewer than k such lines exist and
// the text does not start at the beginning of the output.
func (d *Detector) identity(lines []string, i int, before, content string, atStart bool) (occKey, bool) {
	ctx := make([]string, 0, d.k+1)
	for j := i - 1; j >= 0 && len(ctx) < d.k; j-- {
		if n := norm(lines[j], true); n != "" {
			ctx = append(ctx, n)
		}
	}
	complete := len(ctx) == d.k || atStart
	// reverse to oldest first, then the text before the tag on its own line
	for a, b := 0, len(ctx)-1; a < b; a, b = a+1, b-1 {
		ctx[a], ctx[b] = ctx[b], ctx[a]
	}
	ctx = append(ctx, norm(before, true))
	return occKey{content: content, ctx: ctx}, complete
}

func (d *Detector) alreadySeen(k occKey, complete bool) bool {
	if d.seenSet[k.id()] {
		return true
	}
	if complete {
		return false
	}
	for _, s := range d.seen {
		if s.content == k.content && hasSuffix(s.ctx, k.ctx) {
			return true
		}
	}
	return false
}

func hasSuffix(all, suffix []string) bool {
	if len(suffix) > len(all) {
		return false
	}
	off := len(all) - len(suffix)
	for i := range suffix {
		if all[off+i] != suffix[i] {
			return false
		}
	}
	return true
}

func (d *Detector) remember(k occKey) {
	id := k.id()
	if d.seenSet[id] {
		return
	}
	d.seenSet[id] = true
	d.seen = append(d.seen, k)
	if len(d.seen) > maxSeen {
		old := d.seen[0]
		d.seen = d.seen[1:]
		delete(d.seenSet, old.id())
	}
}

// isEcho reports whether lines i..end (the tag's lines, whole) are part of
// an echoed prompt: they are a piece of a prompt and either carry prompt
// text besides the tag, or continue into the nearest non-blank line above
// (or below, when lookAhead) as the prompt does.
func (d *Detector) isEcho(lines []string, i, end int, lookAhead bool) bool {
	if len(d.prompts) == 0 {
		return false
	}
	var parts []string
	for j := i; j <= end; j++ {
		if n := norm(lines[j], true); n != "" {
			parts = append(parts, n)
		}
	}
	c := strings.Join(parts, "")
	if !d.inPrompt(c) {
		// A narrowed terminal cuts the end off the rows it already shows
		// (the emulator does not reflow): an echoed tag wrapped over two
		// lines then lacks its middle ("<chorus>COMPLETE: n" over
		// "hange: why</chorus>"). Lines that are each a piece of one
		// prompt, in its order, a little apart, are such an echo: no
		// agent writes a prompt's tag with its middle missing.
		return d.truncatedEcho(parts)
	}
	if tagOnly(c) {
		// Bare tag: decided by the neighbours.
		if p := prevNonBlank(lines, i); p >= 0 {
			if d.inPrompt(norm(lines[p], true)+c) || d.inPrompt(norm(lines[p], false)+c) {
				return true
			}
		}
		if lookAhead {
			if n := nextNonBlank(lines, end); n >= 0 {
				if d.inPrompt(c+norm(lines[n], true)) || d.inPrompt(c+norm(lines[n], false)) {
					return true
				}
			}
		}
		return false
	}
	return true
}

// tagOnly reports whether a normalised line is nothing but one tag, perhaps
// with trailing punctuation.
func tagOnly(c string) bool {
	c = strings.TrimRightFunc(c, trailingJunk)
	return strings.HasPrefix(c, openTag) && strings.HasSuffix(c, "</chorus>") && strings.Count(c, openTag) == 1
}

// maxCut bounds how much text a truncated echo may have lost between two
// of its lines.
const maxCut = 400

// truncatedEcho reports lines (normalised, in order) that are each a piece
// of the same prompt, in that order, with text missing between at least
// two of them, but no more than maxCut.
func (d *Detector) truncatedEcho(parts []string) bool {
	if len(parts) < 2 {
		return false
	}
	for _, p := range d.prompts {
		for start := 0; ; {
			k := strings.Index(p[start:], parts[0])
			if k < 0 {
				break
			}
			pos, gap, ok := start+k+len(parts[0]), false, true
			for _, part := range parts[1:] {
				j := strings.Index(p[pos:], part)
				if j < 0 || j > maxCut {
					ok = false
					break
				}
				gap = gap || j > 0
				pos += j + len(part)
			}
			if ok && gap {
				return true
			}
			start += k + 1
		}
	}
	return false
}

func (d *Detector) inPrompt(s string) bool {
	if s == "" {
		return false
	}
	for _, p := range d.prompts {
		if strings.Contains(p, s) {
			return true
		}
	}
	return false
}

func prevNonBlank(lines []string, i int) int {
	for j := i - 1; j >= 0; j-- {
		if norm(lines[j], true) != "" {
			return j
		}
	}
	return -1
}

func nextNonBlank(lines []string, i int) int {
	for j := i + 1; j < len(lines); j++ {
		if norm(lines[j], true) != "" {
			return j
		}
	}
	return -1
}

// inputMarkers start the lines where TUIs show what the user typed.
const inputMarkers = ">›❯"

// uiMarkers are bullets and frame pieces agents draw before text.
const uiMarkers = inputMarkers + "⏺●•◆◇○◯⎿│┃▌▎▏█✻✶✳∴⏵»*-+·"

// isInputLine reports whether the text before a tag is a marker run that
// includes an input marker ("> ", "│ > ").
func isInputLine(before string) bool {
	for _, r := range before {
		switch {
		case unicode.IsSpace(r):
		case strings.ContainsRune(inputMarkers, r):
			return true
		case strings.ContainsRune(uiMarkers, r):
		default:
			return false
		}
	}
	return false
}

// stripMarkers drops leading whitespace and UI bullets.
func stripMarkers(s string) string {
	return strings.TrimLeftFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(uiMarkers, r)
	})
}

// norm is a line with all whitespace removed (and leading UI markers, when
// strip is set), for comparisons that must ignore wrapping and indentation.
func norm(s string, strip bool) string {
	if strip {
		s = stripMarkers(s)
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Split(s, "\n")
}
