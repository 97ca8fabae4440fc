// Package term is the terminal emulator behind each agent tile: a screen
// model of cells, cursor, modes, title and scrollback, fed with a child's
// PTY output and parsed with charmbracelet/x/ansi's state machine
// (vtparser.go). It has no UI dependency, so the engine can use it for
// plain-text extraction.
//
// A front end runs one reader goroutine per PTY that copies output into
// the emulator (an Emulator is an io.Writer that never fails or writes
// short), passes the PTY as WithReplies so queries such as DA1 and DSR
// get answers, and resizes the emulator before the PTY. It draws from
// Snapshot, and encodes input with InputModes plus EncodeMouse,
// EncodePaste and EncodeFocus (keys are encoded in package ui/tile, which
// knows tcell's key types).
//
// Signal detection reads text with TextSince, which returns only the rows
// that left the screen since the previous call plus the current screen;
// Text and Lines give the visible screen alone.
//
// Widths follow rivo/uniseg, as tcell does when it draws, never the
// locale.
package term
