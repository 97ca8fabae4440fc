package ptyproc

import (
	"fmt"
	"time"
)

// The log takes output in batches: a write per chunk read was a system
// call per chunk per agent, several hundred a second with a grid of busy
// agents. What was read reaches the file within logFlushEvery, or at once
// when logFlushBytes gather, and all of it before Done.
const (
	logFlushEvery = 500 * time.Millisecond
	logFlushBytes = 32 << 10
)

// writeLog appends b to the log (up to the cap, then a note once).
// Called by the reader only.
func (p *Proc) writeLog(b []byte) {
	if p.log == nil {
		return
	}
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if p.logErr != nil {
		return
	}
	if p.logCap > 0 {
		room := p.logCap - p.logSize
		if room <= 0 {
			if !p.logNoted {
				p.logNoted = true
				p.logBuf = fmt.Appendf(p.logBuf, "\n[chorus: log truncated at %d bytes]\n", p.logCap)
				p.flushLogLocked()
			}
			return
		}
		if int64(len(b)) > room {
			b = b[:room]
		}
	}
	p.logSize += int64(len(b))
	if p.logSync && len(p.logBuf) == 0 {
		// Straight to the file: nothing waits in this process.
		if err := appendLog(p.log, b); err != nil {
			p.logErr = err
		}
		return
	}
	p.logBuf = append(p.logBuf, b...)
	switch {
	case len(p.logBuf) >= logFlushBytes:
		p.flushLogLocked()
	case p.logTimer == nil:
		p.logTimer = time.AfterFunc(time.Until(OnGrid(time.Now().Add(logFlushEvery))), p.flushLog)
	}
}

func (p *Proc) flushLog() {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	p.logTimer = nil
	p.flushLogLocked()
}

func (p *Proc) flushLogLocked() {
	if len(p.logBuf) == 0 || p.logErr != nil || p.log == nil {
		return
	}
	// Without telling the scheduler (appendLog): the flush falls on the
	// grid, first in that point's work, and would wake the runtime's
	// monitor thread to poll through all of it.
	err := appendLog(p.log, p.logBuf)
	p.logBuf = p.logBuf[:0]
	if err != nil {
		p.logErr = err
	}
}

// closeLog writes what is left and closes the log; the reader is done.
func (p *Proc) closeLog() {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if p.logTimer != nil {
		p.logTimer.Stop()
		p.logTimer = nil
	}
	p.flushLogLocked()
	if cerr := p.log.Close(); p.logErr == nil {
		p.logErr = cerr
	}
	p.log = nil
}
