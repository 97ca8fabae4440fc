package term

// AtRest reports whether the emulator's input is between sequences: no
// escape sequence, string or UTF-8 character begun and not ended. Only
// then do the bytes that follow mean, in a copy built from State, what
// they mean here.
func (e *Emulator) AtRest() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.atRest()
}

func (e *Emulator) atRest() bool {
	return e.fstate == fGround && e.p.State() == stGround && e.u8need == 0 && e.u8n == 0
}

// Checkpoint calls fn with the emulator's state as Parts and its history
// packed (as History), for FromParts and LoadHistory, when its input is
// at rest (AtRest), and reports whether it did. fn runs under the
// emulator's lock, as a tap does, so it sees the state exactly after the
// last write a tap heard. It costs a render of the screen and a copy of
// the packed history, not a render of the history.
func (e *Emulator) Checkpoint(fn func(p Parts, history []byte)) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.atRest() {
		return false
	}
	fn(Parts{W: e.w, H: e.h, Scrollback: e.sb.max, Pushed: e.sb.total, Screen: e.render(false)}, e.sb.export(e.clusters))
	return true
}
