package term

// The parser's transition table, copied with the parser (vtparser.go; MIT,
// Copyright (c) 2023 Charmbracelet, Inc., the notice there) from
// x/ansi/parser, whose package init built it in every chorus process; here
// it is built when the first emulator is made (TestTransitionTable holds
// it to upstream's, byte for byte).

import (
	"math"
	"sync"
)

// States of the parser.
const (
	stGround byte = iota
	stCsiEntry
	stCsiIntermediate
	stCsiParam
	stDcsEntry
	stDcsIntermediate
	stDcsParam
	stDcsString
	stEscape
	stEscapeIntermediate
	stOscString
	stSosString
	stPmString
	stApcString
	stUtf8
)

// Actions of the parser.
const (
	acNone byte = iota
	acClear
	acCollect
	acPrefix
	acDispatch
	acExecute
	acStart
	acPut
	acParam
	acPrint
)

// Packing of commands and parameters.
const (
	prefixShift    = 8
	intermedShift  = 16
	finalMask      = 0xff
	hasMoreFlag    = math.MinInt32
	paramMask      = ^hasMoreFlag
	missingParam   = paramMask
	missingCommand = missingParam
	maxParamsSize  = 32
)

// transitionTable holds, at state<<8 | byte, action<<4 | next state.
type transitionTable []byte

// vtTable is the table, built on first use.
var vtTable = sync.OnceValue(genTransitionTable)

func (t transitionTable) setDefault(action, state byte) {
	for i := range t {
		t[i] = action<<4 | state
	}
}

func (t transitionTable) addOne(code byte, state, action, next byte) {
	t[int(state)<<8|int(code)] = action<<4 | next
}

func (t transitionTable) addMany(codes []byte, state, action, next byte) {
	for _, code := range codes {
		t.addOne(code, state, action, next)
	}
}

func (t transitionTable) addRange(start, end byte, state, action, next byte) {
	for i := int(start); i <= int(end); i++ {
		t.addOne(byte(i), state, action, next)
	}
}

// transition is the next state and the action for byte code in state.
func (t transitionTable) transition(state, code byte) (byte, byte) {
	v := t[int(state)<<8|int(code)]
	return v & 15, v >> 4
}

func byteRange(start, end byte) []byte {
	var a []byte
	for i := int(start); i <= int(end); i++ {
		a = append(a, byte(i))
	}
	return a
}

// genTransitionTable is upstream's GenerateTransitionTable: the DEC ANSI
// parser of the VT500 series, with a UTF-8 state, ':' for sub-parameters,
// SOS/PM/APC dispatched, DEL executed in the ground state and ST (0x9C)
// executed.
func genTransitionTable() transitionTable {
	table := make(transitionTable, 4096)
	table.setDefault(acNone, stGround)

	// Anywhere
	for _, state := range byteRange(stGround, stUtf8) {
		// Anywhere -> Ground
		table.addMany([]byte{0x18, 0x1a, 0x99, 0x9a}, state, acExecute, stGround)
		table.addRange(0x80, 0x8F, state, acExecute, stGround)
		table.addRange(0x90, 0x97, state, acExecute, stGround)
		table.addOne(0x9C, state, acExecute, stGround)
		// Anywhere -> Escape
		table.addOne(0x1B, state, acClear, stEscape)
		// Anywhere -> stSosString
		table.addOne(0x98, state, acStart, stSosString)
		// Anywhere -> stPmString
		table.addOne(0x9E, state, acStart, stPmString)
		// Anywhere -> stApcString
		table.addOne(0x9F, state, acStart, stApcString)
		// Anywhere -> CsiEntry
		table.addOne(0x9B, state, acClear, stCsiEntry)
		// Anywhere -> DcsEntry
		table.addOne(0x90, state, acClear, stDcsEntry)
		// Anywhere -> OscString
		table.addOne(0x9D, state, acStart, stOscString)
		// Anywhere -> Utf8
		table.addRange(0xC2, 0xDF, state, acCollect, stUtf8) // UTF8 2 byte sequence
		table.addRange(0xE0, 0xEF, state, acCollect, stUtf8) // UTF8 3 byte sequence
		table.addRange(0xF0, 0xF4, state, acCollect, stUtf8) // UTF8 4 byte sequence
	}

	// Ground
	table.addRange(0x00, 0x17, stGround, acExecute, stGround)
	table.addOne(0x19, stGround, acExecute, stGround)
	table.addRange(0x1C, 0x1F, stGround, acExecute, stGround)
	table.addRange(0x20, 0x7E, stGround, acPrint, stGround)
	table.addOne(0x7F, stGround, acExecute, stGround)

	// EscapeIntermediate
	table.addRange(0x00, 0x17, stEscapeIntermediate, acExecute, stEscapeIntermediate)
	table.addOne(0x19, stEscapeIntermediate, acExecute, stEscapeIntermediate)
	table.addRange(0x1C, 0x1F, stEscapeIntermediate, acExecute, stEscapeIntermediate)
	table.addRange(0x20, 0x2F, stEscapeIntermediate, acCollect, stEscapeIntermediate)
	table.addOne(0x7F, stEscapeIntermediate, acNone, stEscapeIntermediate)
	// EscapeIntermediate -> Ground
	table.addRange(0x30, 0x7E, stEscapeIntermediate, acDispatch, stGround)

	// Escape
	table.addRange(0x00, 0x17, stEscape, acExecute, stEscape)
	table.addOne(0x19, stEscape, acExecute, stEscape)
	table.addRange(0x1C, 0x1F, stEscape, acExecute, stEscape)
	table.addOne(0x7F, stEscape, acNone, stEscape)
	// Escape -> Ground
	table.addRange(0x30, 0x4F, stEscape, acDispatch, stGround)
	table.addRange(0x51, 0x57, stEscape, acDispatch, stGround)
	table.addOne(0x59, stEscape, acDispatch, stGround)
	table.addOne(0x5A, stEscape, acDispatch, stGround)
	table.addOne(0x5C, stEscape, acDispatch, stGround)
	table.addRange(0x60, 0x7E, stEscape, acDispatch, stGround)
	// Escape -> Escape_intermediate
	table.addRange(0x20, 0x2F, stEscape, acCollect, stEscapeIntermediate)
	// Escape -> Sos_pm_apc_string
	table.addOne('X', stEscape, acStart, stSosString) // SOS
	table.addOne('^', stEscape, acStart, stPmString)  // PM
	table.addOne('_', stEscape, acStart, stApcString) // APC
	// Escape -> Dcs_entry
	table.addOne('P', stEscape, acClear, stDcsEntry)
	// Escape -> Csi_entry
	table.addOne('[', stEscape, acClear, stCsiEntry)
	// Escape -> Osc_string
	table.addOne(']', stEscape, acStart, stOscString)

	// Sos_pm_apc_string
	for _, state := range byteRange(stSosString, stApcString) {
		table.addRange(0x00, 0x17, state, acPut, state)
		table.addOne(0x19, state, acPut, state)
		table.addRange(0x1C, 0x1F, state, acPut, state)
		table.addRange(0x20, 0x7F, state, acPut, state)
		// ESC, ST, CAN, and SUB terminate the sequence
		table.addOne(0x1B, state, acDispatch, stEscape)
		table.addOne(0x9C, state, acDispatch, stGround)
		table.addMany([]byte{0x18, 0x1A}, state, acNone, stGround)
	}

	// Dcs_entry
	table.addRange(0x00, 0x07, stDcsEntry, acNone, stDcsEntry)
	table.addRange(0x0E, 0x17, stDcsEntry, acNone, stDcsEntry)
	table.addOne(0x19, stDcsEntry, acNone, stDcsEntry)
	table.addRange(0x1C, 0x1F, stDcsEntry, acNone, stDcsEntry)
	table.addOne(0x7F, stDcsEntry, acNone, stDcsEntry)
	// Dcs_entry -> Dcs_intermediate
	table.addRange(0x20, 0x2F, stDcsEntry, acCollect, stDcsIntermediate)
	// Dcs_entry -> Dcs_param
	table.addRange(0x30, 0x3B, stDcsEntry, acParam, stDcsParam)
	table.addRange(0x3C, 0x3F, stDcsEntry, acPrefix, stDcsParam)
	// Dcs_entry -> Dcs_passthrough
	table.addRange(0x08, 0x0D, stDcsEntry, acPut, stDcsString) // Follows ECMA-48 § 8.3.27
	// XXX: allows passing ESC (not a ECMA-48 standard) this to allow for
	// passthrough of ANSI sequences like in Screen or Tmux passthrough mode.
	table.addOne(0x1B, stDcsEntry, acPut, stDcsString)
	table.addRange(0x40, 0x7E, stDcsEntry, acStart, stDcsString)

	// Dcs_intermediate
	table.addRange(0x00, 0x17, stDcsIntermediate, acNone, stDcsIntermediate)
	table.addOne(0x19, stDcsIntermediate, acNone, stDcsIntermediate)
	table.addRange(0x1C, 0x1F, stDcsIntermediate, acNone, stDcsIntermediate)
	table.addRange(0x20, 0x2F, stDcsIntermediate, acCollect, stDcsIntermediate)
	table.addOne(0x7F, stDcsIntermediate, acNone, stDcsIntermediate)
	// Dcs_intermediate -> Dcs_passthrough
	table.addRange(0x30, 0x3F, stDcsIntermediate, acStart, stDcsString)
	table.addRange(0x40, 0x7E, stDcsIntermediate, acStart, stDcsString)

	// Dcs_param
	table.addRange(0x00, 0x17, stDcsParam, acNone, stDcsParam)
	table.addOne(0x19, stDcsParam, acNone, stDcsParam)
	table.addRange(0x1C, 0x1F, stDcsParam, acNone, stDcsParam)
	table.addRange(0x30, 0x3B, stDcsParam, acParam, stDcsParam)
	table.addOne(0x7F, stDcsParam, acNone, stDcsParam)
	table.addRange(0x3C, 0x3F, stDcsParam, acNone, stDcsParam)
	// Dcs_param -> Dcs_intermediate
	table.addRange(0x20, 0x2F, stDcsParam, acCollect, stDcsIntermediate)
	// Dcs_param -> Dcs_passthrough
	table.addRange(0x40, 0x7E, stDcsParam, acStart, stDcsString)

	// Dcs_passthrough
	table.addRange(0x00, 0x17, stDcsString, acPut, stDcsString)
	table.addOne(0x19, stDcsString, acPut, stDcsString)
	table.addRange(0x1C, 0x1F, stDcsString, acPut, stDcsString)
	table.addRange(0x20, 0x7E, stDcsString, acPut, stDcsString)
	table.addOne(0x7F, stDcsString, acPut, stDcsString)
	table.addRange(0x80, 0xFF, stDcsString, acPut, stDcsString) // Allow Utf8 characters by extending the printable range from 0x7F to 0xFF
	// ST, CAN, SUB, and ESC terminate the sequence
	table.addOne(0x1B, stDcsString, acDispatch, stEscape)
	table.addOne(0x9C, stDcsString, acDispatch, stGround)
	table.addMany([]byte{0x18, 0x1A}, stDcsString, acNone, stGround)

	// Csi_param
	table.addRange(0x00, 0x17, stCsiParam, acExecute, stCsiParam)
	table.addOne(0x19, stCsiParam, acExecute, stCsiParam)
	table.addRange(0x1C, 0x1F, stCsiParam, acExecute, stCsiParam)
	table.addRange(0x30, 0x3B, stCsiParam, acParam, stCsiParam)
	table.addOne(0x7F, stCsiParam, acNone, stCsiParam)
	table.addRange(0x3C, 0x3F, stCsiParam, acNone, stCsiParam)
	// Csi_param -> Ground
	table.addRange(0x40, 0x7E, stCsiParam, acDispatch, stGround)
	// Csi_param -> Csi_intermediate
	table.addRange(0x20, 0x2F, stCsiParam, acCollect, stCsiIntermediate)

	// Csi_intermediate
	table.addRange(0x00, 0x17, stCsiIntermediate, acExecute, stCsiIntermediate)
	table.addOne(0x19, stCsiIntermediate, acExecute, stCsiIntermediate)
	table.addRange(0x1C, 0x1F, stCsiIntermediate, acExecute, stCsiIntermediate)
	table.addRange(0x20, 0x2F, stCsiIntermediate, acCollect, stCsiIntermediate)
	table.addOne(0x7F, stCsiIntermediate, acNone, stCsiIntermediate)
	// Csi_intermediate -> Ground
	table.addRange(0x40, 0x7E, stCsiIntermediate, acDispatch, stGround)
	// Csi_intermediate -> Csi_ignore
	table.addRange(0x30, 0x3F, stCsiIntermediate, acNone, stGround)

	// Csi_entry
	table.addRange(0x00, 0x17, stCsiEntry, acExecute, stCsiEntry)
	table.addOne(0x19, stCsiEntry, acExecute, stCsiEntry)
	table.addRange(0x1C, 0x1F, stCsiEntry, acExecute, stCsiEntry)
	table.addOne(0x7F, stCsiEntry, acNone, stCsiEntry)
	// Csi_entry -> Ground
	table.addRange(0x40, 0x7E, stCsiEntry, acDispatch, stGround)
	// Csi_entry -> Csi_intermediate
	table.addRange(0x20, 0x2F, stCsiEntry, acCollect, stCsiIntermediate)
	// Csi_entry -> Csi_param
	table.addRange(0x30, 0x3B, stCsiEntry, acParam, stCsiParam)
	table.addRange(0x3C, 0x3F, stCsiEntry, acPrefix, stCsiParam)

	// Osc_string
	table.addRange(0x00, 0x06, stOscString, acNone, stOscString)
	table.addRange(0x08, 0x17, stOscString, acNone, stOscString)
	table.addOne(0x19, stOscString, acNone, stOscString)
	table.addRange(0x1C, 0x1F, stOscString, acNone, stOscString)
	table.addRange(0x20, 0xFF, stOscString, acPut, stOscString) // Allow Utf8 characters by extending the printable range from 0x7F to 0xFF

	// ST, CAN, SUB, ESC, and BEL terminate the sequence
	table.addOne(0x1B, stOscString, acDispatch, stEscape)
	table.addOne(0x07, stOscString, acDispatch, stGround)
	table.addOne(0x9C, stOscString, acDispatch, stGround)
	table.addMany([]byte{0x18, 0x1A}, stOscString, acNone, stGround)

	return table
}
