package signal

import "testing"

func TestListPriceUSD(t *testing.T) {
	u := TokenUsage{Input: 1_000_000, Output: 1_000_000, CacheRead: 1_000_000, CacheWrite: 1_000_000}
	for model, want := range map[string]float64{
		"claude-opus-4-8":            5 + 25 + 0.5 + 6.25,
		"claude-opus-4-1-20250805":   15 + 75 + 1.5 + 18.75,
		"claude-sonnet-4-5-20250929": 3 + 15 + 0.3 + 3.75,
		"claude-haiku-4-5":           1 + 5 + 0.1 + 1.25,
		"gpt-5-codex":                0,
	} {
		if got := ListPriceUSD(model, u); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
}
