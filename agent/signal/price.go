package signal

import "strings"

// price is list price in dollars per million tokens.
type price struct{ in, out float64 }

// ListPriceUSD prices usage for CLIs that record tokens but not dollars
// (Claude Code's transcripts), from Anthropic's list prices; cache writes
// cost 1.25× input, cache reads 0.1×. Unknown models cost 0.
func ListPriceUSD(model string, u TokenUsage) float64 {
	m := strings.ToLower(model)
	var p price
	switch {
	case strings.Contains(m, "opus-4-0"), strings.Contains(m, "opus-4-1"), strings.Contains(m, "opus-4-2"),
		m == "claude-opus-4", strings.Contains(m, "3-opus"):
		p = price{15, 75}
	case strings.Contains(m, "opus"):
		p = price{5, 25}
	case strings.Contains(m, "sonnet"):
		p = price{3, 15}
	case strings.Contains(m, "3-5-haiku"), strings.Contains(m, "haiku-3-5"):
		p = price{0.8, 4}
	case strings.Contains(m, "3-haiku"):
		p = price{0.25, 1.25}
	case strings.Contains(m, "haiku"):
		p = price{1, 5}
	default:
		return 0
	}
	return (float64(u.Input)*p.in + float64(u.Output)*p.out + float64(u.CacheWrite)*p.in*1.25 + float64(u.CacheRead)*p.in*0.1) / 1e6
}
