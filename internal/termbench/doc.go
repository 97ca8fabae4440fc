// Package termbench keeps the evidence for the hand-written terminal
// emulator (agent/term): its tests replay the recorded sessions of
// agent/term/testdata/replay through agent/term and through the two Go
// emulators it was chosen over, github.com/charmbracelet/x/vt and
// github.com/hinshun/vt10x, and compare the screens with tmux's at every
// quiet checkpoint and the ingest speed. Only its tests import those
// modules, so the chorus binary never links them.
package termbench
