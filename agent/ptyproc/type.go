package ptyproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// TypeOptions tune Type.
type TypeOptions struct {
	// Paste wraps the text in bracketed-paste markers; use it when the
	// application enabled mode 2004, so that newlines in the text stay
	// inside the input instead of submitting it line by line.
	Paste bool
	// Delay between the text and Enter (default 200ms). Claude Code turns a
	// '\r' that arrives with the text into a newline inside its input box.
	Delay time.Duration
	// Confirm decides whether the agent reacted to Enter. It is called each
	// time new output arrives after an Enter (and once when an attempt's
	// wait ends). With Confirm nil, Marker decides; with neither, any output
	// after Enter counts.
	Confirm func() bool
	// Wake, when set, makes Type re-run Confirm on each receive. Use it when
	// Confirm reads state that lags behind the raw output, e.g. a terminal
	// emulator's screen fed by the Output consumer.
	Wake <-chan struct{}
	// Marker, when set, must appear in the output that follows an Enter.
	Marker string
	// Attempts is how many times Enter is sent in all (default 3).
	Attempts int
	// AttemptWait is how long each Enter waits for confirmation (default 3s).
	AttemptWait time.Duration
	// OnRetry, when set, is told before Enter is sent again, so callers
	// can record deliveries that needed it.
	OnRetry func(attempt int)
}

// ErrNotConfirmed is returned by Type when no Enter was confirmed.
var ErrNotConfirmed = errors.New("ptyproc: input not confirmed")

const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// Type types text into an interactive agent and makes sure it was
// submitted: it writes the text, pauses, sends Enter on its own, and waits
// for confirmation, re-sending Enter a bounded number of times. Agents that
// were sent input without such a check have been seen to lose it.
func (p *Proc) Type(ctx context.Context, text string, opts TypeOptions) error {
	return Type(ctx, p, &p.recent, p.done, text, opts)
}

// Type is Proc.Type for any terminal: w takes the input, rec holds the
// output read since, done is closed when the process has ended.
func Type(ctx context.Context, w io.Writer, rec *Recent, done <-chan struct{}, text string, opts TypeOptions) error {
	t := typist{w: w, rec: rec, done: done}
	defer rec.Watch()()
	return t.typ(ctx, text, opts)
}

type typist struct {
	w    io.Writer
	rec  *Recent
	done <-chan struct{}
}

func (p typist) typ(ctx context.Context, text string, opts TypeOptions) error {
	if opts.Delay <= 0 {
		opts.Delay = 200 * time.Millisecond
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	if opts.AttemptWait <= 0 {
		opts.AttemptWait = 3 * time.Second
	}
	payload := text
	if opts.Paste {
		// The text must not be able to end the paste early and have the rest
		// taken as keystrokes.
		payload = pasteStart + strings.ReplaceAll(text, pasteEnd, "") + pasteEnd
	}
	if _, err := p.w.Write([]byte(payload)); err != nil {
		return err
	}
	if err := p.pause(ctx, opts.Delay); err != nil {
		return err
	}
	for attempt := 1; attempt <= opts.Attempts; attempt++ {
		if attempt > 1 && opts.OnRetry != nil {
			opts.OnRetry(attempt)
		}
		off := p.rec.Offset()
		if _, err := p.w.Write([]byte("\r")); err != nil {
			return err
		}
		ok, err := p.confirmed(ctx, off, opts)
		if err != nil || ok {
			return err
		}
	}
	return fmt.Errorf("%w after %d attempts", ErrNotConfirmed, opts.Attempts)
}

func (p typist) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.done:
		return errors.New("ptyproc: process exited while typing")
	}
}

// confirmed waits on output notifications (no polling) until the check
// passes, the attempt's time is up, or the process or ctx ends.
func (p typist) confirmed(ctx context.Context, off int64, opts TypeOptions) (bool, error) {
	check := func(out []byte) bool {
		switch {
		case opts.Confirm != nil:
			return opts.Confirm()
		case opts.Marker != "":
			return bytes.Contains(out, []byte(opts.Marker))
		default:
			return len(out) > 0
		}
	}
	t := time.NewTimer(opts.AttemptWait)
	defer t.Stop()
	for {
		out, _, changed := p.rec.Since(off)
		if check(out) {
			return true, nil
		}
		select {
		case <-changed:
		case <-opts.Wake:
		case <-t.C:
			out, _, _ = p.rec.Since(off)
			return check(out), nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-p.done:
			out, _, _ = p.rec.Since(off)
			if check(out) {
				return true, nil
			}
			return false, errors.New("ptyproc: process exited while typing")
		}
	}
}
