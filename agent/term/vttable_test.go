package term

import (
	"testing"

	"github.com/charmbracelet/x/ansi/parser"
)

// The copied table, states, actions and packing are upstream's.
func TestTransitionTable(t *testing.T) {
	got, want := vtTable(), parser.GenerateTransitionTable()
	if len(got) != len(want) {
		t.Fatalf("%d entries, upstream %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("state %d byte %#02x: %#02x, upstream %#02x", i>>8, i&0xff, got[i], want[i])
		}
	}
	for _, c := range []struct{ ours, theirs byte }{
		{stGround, parser.GroundState}, {stCsiEntry, parser.CsiEntryState}, {stCsiIntermediate, parser.CsiIntermediateState},
		{stCsiParam, parser.CsiParamState}, {stDcsEntry, parser.DcsEntryState}, {stDcsIntermediate, parser.DcsIntermediateState},
		{stDcsParam, parser.DcsParamState}, {stDcsString, parser.DcsStringState}, {stEscape, parser.EscapeState},
		{stEscapeIntermediate, parser.EscapeIntermediateState}, {stOscString, parser.OscStringState}, {stSosString, parser.SosStringState},
		{stPmString, parser.PmStringState}, {stApcString, parser.ApcStringState}, {stUtf8, parser.Utf8State},
		{acNone, parser.NoneAction}, {acClear, parser.ClearAction}, {acCollect, parser.CollectAction}, {acPrefix, parser.PrefixAction},
		{acDispatch, parser.DispatchAction}, {acExecute, parser.ExecuteAction}, {acStart, parser.StartAction}, {acPut, parser.PutAction},
		{acParam, parser.ParamAction}, {acPrint, parser.PrintAction},
	} {
		if c.ours != c.theirs {
			t.Errorf("constant %d, upstream %d", c.ours, c.theirs)
		}
	}
	if prefixShift != parser.PrefixShift || intermedShift != parser.IntermedShift || hasMoreFlag != parser.HasMoreFlag ||
		missingParam != parser.MissingParam || maxParamsSize != parser.MaxParamsSize {
		t.Error("packing constants differ from upstream's")
	}
	c := seqCmd('p' | '?'<<parser.PrefixShift | '$'<<parser.IntermedShift)
	if c.Prefix() != '?' || c.Intermediate() != '$' || c.Final() != 'p' {
		t.Errorf("seqCmd unpacks %q %q %q", c.Prefix(), c.Intermediate(), c.Final())
	}
}
