package usage

import (
	"math/rand"
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	now := time.Date(2026, 11, 28, 1, 0, 0, 0, time.Local)
	none := time.Time{}
	cases := []struct {
		name  string
		in    string
		hit   bool
		reset time.Time
	}{
		// Recorded from Claude Code 2.1.330 -p --output-format stream-json
		// against a server answering 429 with retry-after: 30.
		{"claude api_retry", `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":31000,"error_status":429,"error":"rate_limit","session_id":"x"}`, true, now.Add(31 * time.Second)},
		{"claude error message", `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: Request rejected (429) · rate limited"}]},"error":"rate_limit","is_api_error_message":true,"api_error_status":429,"api_error_type":"rate_limit_error"}`, true, none},
		{"claude result", `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error_type":"rate_limit_error","result":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"}`, true, none},
		{"claude result with reset", `{"type":"result","is_error":true,"api_error_status":429,"result":"API Error: 429 usage limit reached; resets at 3am"}`, true, time.Date(2026, 11, 28, 3, 0, 0, 0, time.Local)},
		{"claude other retry", `{"type":"system","subtype":"api_retry","attempt":1,"retry_delay_ms":500,"error_status":529,"error":"overloaded"}`, false, none},
		{"claude tool result mentioning 429", `{"type":"user","message":{"content":[{"type":"tool_result","content":"HTTP 429 rate limit handler added"}]}}`, false, none},
		{"claude assistant text about rate limits", `{"type":"assistant","message":{"content":[{"type":"text","text":"I added the rate_limit middleware (429 on excess)."}]}}`, false, none},
		{"codex error event", `{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}`, true, none},
		{"codex turn failed", `{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again in 20 minutes."}}`, true, now.Add(20 * time.Minute)},
		{"codex other error", `{"type":"error","message":"stream disconnected before completion"}`, false, none},
		{"plan limit with epoch", `Claude AI usage limit reached|1764302400`, true, time.Unix(1764302400, 0)},
		{"plan limit screen", `5-hour limit reached ∙ resets 3pm`, true, time.Date(2026, 11, 28, 15, 0, 0, 0, time.Local)},
		{"interactive API error", `  ⎿  API Error: Request rejected (429) · rate limited`, true, none},
		{"usage limit reached, resets at 00:30 (tomorrow)", `Claude usage limit reached. Your limit will reset at 00:30.`, true, time.Date(2026, 11, 29, 0, 30, 0, 0, time.Local)},
		// Recorded from interactive Claude Code 2.1.330 (retry-after 40;
		// shown from its third attempt on).
		{"interactive claude retrying", "✻ 429 Number of requests has exceeded your rate limit · retrying in 41s · attempt 3/10", true, now.Add(41 * time.Second)},
		{"interactive claude other retry", "✻ API Error (529 overloaded) · retrying in 12s · attempt 2/10", false, none},
		{"an agent's code", `func rateLimit(w http.ResponseWriter) { w.WriteHeader(429) }`, false, none},
		{"empty", ``, false, none},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := Line(c.in, now)
			if ok != c.hit || !f.Reset.Equal(c.reset) {
				t.Fatalf("got %v reset %v (%q); want %v reset %v", ok, f.Reset, f.Text, c.hit, c.reset)
			}
			if ok && f.Text == "" {
				t.Fatal("a finding without text")
			}
		})
	}
}

func TestText(t *testing.T) {
	now := time.Date(2026, 11, 28, 1, 0, 0, 0, time.Local)
	if f, ok := Text("The agent process exited with code 1: API Error: Request rejected (429) · retry after 90 seconds", now); !ok || !f.Reset.Equal(now.Add(90*time.Second)) {
		t.Fatalf("%v %+v", ok, f)
	}
	if _, ok := Text("The agent process exited with code 1: Not logged in", now); ok {
		t.Fatal("not a limit")
	}
	if f, _ := Text("usage limit reached, resets 9 pm", now); !f.Reset.Equal(time.Date(2026, 11, 28, 21, 0, 0, 0, time.Local)) {
		t.Fatalf("reset %v", f.Reset)
	}
}

// TestScreen: each form of a limit on a screen is found, in any case and
// mid-screen (the quick test in front of the pattern lets all through),
// and an agent's own text about limits is not.
func TestScreen(t *testing.T) {
	now := time.Date(2026, 11, 28, 1, 0, 0, 0, time.Local)
	for _, s := range []string{
		"API Error: Request rejected (429) · retrying in 5 seconds",
		"api error 429",
		"API Error: Rate limited",
		"Claude usage limit reached. Your limit will reset at 3pm",
		"5-HOUR LIMIT REACHED ∙ resets 9pm",
		"Weekly limit reached",
		"You've hit your usage limit",
		"you have hit your limit",
		"Rate limit reached for requests",
		"stream error; last status: 429",
		"429 Too Many Requests, retrying in 3s",
		"rate_limit_error … retrying in 10s",
		"Claude AI usage limit reached|1764300000",
		"LiMiT reached|1764300000",
	} {
		screen := "╭─ work ─╮\nsome output line\n" + s + "\n> "
		if _, ok := Screen(screen, now); !ok {
			t.Errorf("not found: %q", s)
		}
	}
	for _, s := range []string{
		"func limiter() {} // rate limits requests",
		"HTTP 4290 bytes",
		"an ordinary screen with no such word",
		"",
		"l",
		"limi",
	} {
		if _, ok := Screen(s, now); ok {
			t.Errorf("found in %q", s)
		}
	}
}

// BenchmarkScreenNoLimit is the common case: a busy screen with no limit.
func BenchmarkScreenNoLimit(b *testing.B) {
	screen := strings.Repeat("● Reading file src/lib/parser.go (120 lines) and editing the handler\n", 40)
	for b.Loop() {
		Screen(screen, time.Time{})
	}
}

// Screen runs its machine line by line; over random screens mixing every
// form with near misses, line numbers and blank lines it finds what the
// machine run over the whole text finds.
func TestScreenLineByLineAsWhole(t *testing.T) {
	now := time.Date(2026, 11, 28, 1, 0, 0, 0, time.Local)
	parts := []string{"API Error: 429 {\"type\":\"rate_limit_error\"}", "API Error (429)", "Usage limit reached", "weekly limit reached",
		"You've hit your usage limit", "you have hit your limit", "Rate limit reached for gpt", "last status: 429",
		"  429 ✓ agent 3: edited", "error 429, retrying in 5s", "rate-limit hit, retrying in 30 seconds", "limit reached|1764291600",
		"Claude usage limit reached. Your limit will reset at 5pm", "resets 3am", "unlimited", "LIMIT", "lim\nit", "42\n9",
		"pkg/mod042/file_0429.go", "", " ", "API Error:", "x429y", "rate", "limit", "retrying in 2 minutes", "ok"}
	whole := func(text string) (Finding, bool) {
		loc := screenText().FindStringIndex(text)
		if loc == nil {
			return Finding{}, false
		}
		start := strings.LastIndexByte(text[:loc[0]], '\n') + 1
		end := len(text)
		if i := strings.IndexByte(text[loc[1]:], '\n'); i >= 0 {
			end = loc[1] + i
			if j := strings.IndexByte(text[end+1:], '\n'); j >= 0 {
				end = end + 1 + j
			}
		}
		said := text[start:end]
		return Finding{Text: oneLine(said), Reset: resetIn(said, now)}, true
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for k := rng.Intn(12); k > 0; k-- {
			b.WriteString(parts[rng.Intn(len(parts))])
			if rng.Intn(3) > 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		text := b.String()
		gf, gok := Screen(text, now)
		wf, wok := whole(text)
		if gf != wf || gok != wok {
			t.Fatalf("%q:\nline by line %+v %v\nwhole text   %+v %v", text, gf, gok, wf, wok)
		}
	}
}
