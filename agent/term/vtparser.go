package term

// The sequence parser, adapted from charmbracelet/x/ansi v0.11.9
// (parser.go, parser_handler.go, the Cmd and Param types) with its
// transition table (x/ansi/parser, vttable.go): that package also builds
// width tables and pulls in go-runewidth, displaywidth and uax29 at init,
// and its parser package builds the table at init, which every chorus
// process ran (about 6% of `chorus --version`'s CPU). Only what the
// emulator uses is kept: strings never reach the parser (feed keeps them
// away), so their data is collected as upstream does but dispatched
// nowhere.
//
// Copyright (c) 2023 Charmbracelet, Inc. MIT License: permission is
// hereby granted, free of charge, to any person obtaining a copy of this
// software and associated documentation files (the "Software"), to deal
// in the Software without restriction, including without limitation the
// rights to use, copy, modify, merge, publish, distribute, sublicense,
// and/or sell copies of the Software, and to permit persons to whom the
// Software is furnished to do so, subject to the following conditions:
// The above copyright notice and this permission notice shall be
// included in all copies or substantial portions of the Software.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS
// OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
// MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
// IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY
// CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT,
// TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE
// SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

import (
	"unicode/utf8"
	"unsafe"
)

// seqCmd is a sequence's final byte packed with its private prefix and
// intermediate byte.
type seqCmd int

// Prefix is the private prefix ('<' '=' '>' '?'), 0 when none.
func (c seqCmd) Prefix() byte { return byte(int(c) >> prefixShift & finalMask) }

// Intermediate is the intermediate byte (0x20–0x2F), 0 when none.
func (c seqCmd) Intermediate() byte { return byte(int(c) >> intermedShift & finalMask) }

// Final is the sequence's final byte.
func (c seqCmd) Final() byte { return byte(int(c) & finalMask) }

// seqParam is one parameter, with hasMoreFlag set when a
// sub-parameter (after ':') follows.
type seqParam int

func (s seqParam) param(def int) int {
	p := int(s) & paramMask
	if p == missingParam {
		return def
	}
	return p
}

func (s seqParam) hasMore() bool { return s&hasMoreFlag != 0 }

// seqParams is a sequence's parameters.
type seqParams []seqParam

// Param is parameter i (def when missing), whether a sub-parameter
// follows it, and false when there is no parameter i.
func (p seqParams) Param(i, def int) (int, bool, bool) {
	if i < 0 || i >= len(p) {
		return def, false, false
	}
	return p[i].param(def), p[i].hasMore(), true
}

// vtHandler is what the parser calls; a nil field is skipped.
type vtHandler struct {
	Print     func(r rune)
	Execute   func(b byte)
	HandleCsi func(cmd seqCmd, params seqParams)
	HandleEsc func(cmd seqCmd)
}

// vtParser is a DEC ANSI sequence parser: upstream's state machine.
type vtParser struct {
	handler   vtHandler
	table     transitionTable
	params    []int
	data      []byte
	dataLen   int
	paramsLen int // parameters collected; bytes of a rune in stUtf8
	cmd       int // final | prefix<<prefixShift | intermediate<<intermedShift
	state     byte
}

func newVTParser(h vtHandler, dataSize int) *vtParser {
	return &vtParser{handler: h, table: vtTable(), params: make([]int, maxParamsSize), data: make([]byte, dataSize)}
}

func (p *vtParser) Params() seqParams {
	return unsafe.Slice((*seqParam)(unsafe.Pointer(&p.params[0])), p.paramsLen)
}

func (p *vtParser) decodeRune() rune {
	rw := utf8ByteLen(byte(p.cmd & 0xff))
	if rw == -1 {
		return utf8.RuneError
	}
	r, _ := utf8.DecodeRune((*[utf8.UTFMax]byte)(unsafe.Pointer(&p.cmd))[:rw])
	return r
}

// Reset returns the parser to the ground state.
func (p *vtParser) Reset() {
	p.clear()
	p.state = stGround
}

func (p *vtParser) clear() {
	if len(p.params) > 0 {
		p.params[0] = missingParam
	}
	p.paramsLen = 0
	p.cmd = 0
}

// State is the parser's current state.
func (p *vtParser) State() byte { return p.state }

// Advance feeds the parser one byte.
func (p *vtParser) Advance(b byte) byte {
	if p.state == stUtf8 {
		return p.advanceUtf8(b)
	}
	return p.advance(b)
}

func (p *vtParser) collectRune(b byte) {
	if p.paramsLen >= utf8.UTFMax {
		return
	}
	shift := p.paramsLen * 8
	p.cmd &^= 0xff << shift
	p.cmd |= int(b) << shift
	p.paramsLen++
}

func (p *vtParser) advanceUtf8(b byte) byte {
	p.collectRune(b)
	rw := utf8ByteLen(byte(p.cmd & 0xff))
	if rw == -1 {
		panic("invalid rune") // the state machine let a bad first byte through
	}
	if p.paramsLen < rw {
		return acCollect
	}
	if p.handler.Print != nil {
		p.handler.Print(p.decodeRune())
	}
	p.state = stGround
	p.paramsLen = 0
	return acPrint
}

func (p *vtParser) advance(b byte) byte {
	state, action := p.table.transition(p.state, b)
	// Leaving stEscape clears: a sequence ended by ST (ESC \) was
	// dispatched on the way into it without a clear.
	if p.state != state {
		if p.state == stEscape {
			p.performAction(acClear, state, b)
		}
		if action == acPut &&
			p.state == stDcsEntry && state == stDcsString {
			p.performAction(acStart, state, 0)
		}
	}
	if b == 0x1b && p.state == stEscape {
		p.performAction(acExecute, state, b) // two ESCs in a row
	} else {
		p.performAction(action, state, b)
	}
	p.state = state
	return action
}

func (p *vtParser) parseStringCmd() {
	datalen := len(p.data)
	if p.dataLen >= 0 {
		datalen = p.dataLen
	}
	for i := range datalen {
		d := p.data[i]
		if d < '0' || d > '9' {
			break
		}
		if p.cmd == missingCommand {
			p.cmd = 0
		}
		p.cmd *= 10
		p.cmd += int(d - '0')
	}
}

func (p *vtParser) performAction(action byte, state byte, b byte) {
	switch action {
	case acClear:
		p.clear()

	case acPrint:
		p.cmd = int(b)
		if p.handler.Print != nil {
			p.handler.Print(rune(b))
		}

	case acExecute:
		p.cmd = int(b)
		if p.handler.Execute != nil {
			p.handler.Execute(b)
		}

	case acPrefix:
		// Only the last prefix is kept.
		p.cmd &^= 0xff << prefixShift
		p.cmd |= int(b) << prefixShift

	case acCollect:
		if state == stUtf8 {
			p.paramsLen = 0
			p.collectRune(b)
		} else {
			// Only the last intermediate byte is kept.
			p.cmd &^= 0xff << intermedShift
			p.cmd |= int(b) << intermedShift
		}

	case acParam:
		if p.paramsLen >= len(p.params) {
			break
		}
		if b >= '0' && b <= '9' {
			if p.params[p.paramsLen] == missingParam {
				p.params[p.paramsLen] = 0
			}
			p.params[p.paramsLen] *= 10
			p.params[p.paramsLen] += int(b - '0')
		}
		if b == ':' {
			p.params[p.paramsLen] |= hasMoreFlag
		}
		if b == ';' || b == ':' {
			p.paramsLen++
			if p.paramsLen < len(p.params) {
				p.params[p.paramsLen] = missingParam
			}
		}

	case acStart:
		if p.dataLen < 0 && p.data != nil {
			p.data = p.data[:0]
		} else {
			p.dataLen = 0
		}
		if p.state >= stDcsEntry && p.state <= stDcsString {
			p.cmd |= int(b)
		} else {
			p.cmd = missingCommand
		}

	case acPut:
		if p.state == stOscString && b == ';' && p.cmd == missingCommand {
			p.parseStringCmd()
		}
		if p.dataLen < 0 {
			p.data = append(p.data, b)
		} else if p.dataLen < len(p.data) {
			p.data[p.dataLen] = b
			p.dataLen++
		}

	case acDispatch:
		if p.paramsLen > 0 && p.paramsLen < len(p.params)-1 ||
			p.paramsLen == 0 && len(p.params) > 0 && p.params[0] != missingParam {
			p.paramsLen++
		}
		if p.state == stOscString && p.cmd == missingCommand {
			p.parseStringCmd()
		}
		switch p.state {
		case stCsiEntry, stCsiParam, stCsiIntermediate:
			p.cmd |= int(b)
			if p.handler.HandleCsi != nil {
				p.handler.HandleCsi(seqCmd(p.cmd), p.Params())
			}
		case stEscape, stEscapeIntermediate:
			p.cmd |= int(b)
			if p.handler.HandleEsc != nil {
				p.handler.HandleEsc(seqCmd(p.cmd))
			}
		}
		// DCS, OSC, SOS, PM and APC: no handler (feed keeps strings away).
	}
}

func utf8ByteLen(b byte) int {
	switch {
	case b <= 0x7f:
		return 1
	case b >= 0xc0 && b <= 0xdf:
		return 2
	case b >= 0xe0 && b <= 0xef:
		return 3
	case b >= 0xf0 && b <= 0xf7:
		return 4
	}
	return -1
}
