package ui

import (
	"context"
	"testing"

	"github.com/chorus-dev/chorus/orchestrator"
)

// u undoes only the person's own last action: after a resume and then a
// checkpoint (which cannot be undone) it says so and leaves the resume
// alone; a pause the engine has since lifted is not replayed.
func TestUndoNeverReachesPastAnotherAction(t *testing.T) {
	s := newSession(t, "hang\n", nil)
	d := s.start(200, 40)
	d.press("<Space>")
	s.waitSnap("paused", func(sn orchestrator.Snapshot) bool { return sn.Paused })
	d.press("<Space>")
	s.waitSnap("resumed", func(sn orchestrator.Snapshot) bool { return !sn.Paused })
	d.press("c")
	s.waitFor("checkpoint", kind(orchestrator.EvCheckpoint, ""))
	d.press("u")
	d.waitShown("nothing to undo: the last action (checkpoint) cannot be undone")
	if err := s.eng.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.eng.Snapshot().Paused {
		t.Fatal("u undid the resume from before the checkpoint")
	}

	// Space pauses; another front end resumes; u does not resume or pause
	// again on the strength of a pause that no longer holds.
	d.press("<Space>")
	d.waitShown("paused: no new agents start") // shown as the undo entry is kept
	if err := s.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdResume}); err != nil {
		t.Fatal(err)
	}
	d.waitGone("⏸ PAUSED") // the UI has seen the resume: u is judged on it
	d.press("u")
	d.waitShown("not undoing pause: autopilot has been resumed since")

	// An undoable action right after is undone as before.
	// Its confirmation may give way at once to autopilot's "nothing to
	// do" (an event that follows the command's reply): wait on the
	// engine, then for the UI to have taken the reply.
	d.press("m")
	s.waitSnap("autopilot", func(sn orchestrator.Snapshot) bool { return sn.Mode == "autopilot" })
	d.sync()
	d.press("<Space>") // pause it: nothing to run
	d.waitShown("paused: no new agents start")
	d.press("u")
	s.waitSnap("resumed by undo", func(sn orchestrator.Snapshot) bool { return !sn.Paused })
	d.press("u")
	s.waitSnap("semi-auto by undo", func(sn orchestrator.Snapshot) bool { return sn.Mode == "semi-auto" })
}
