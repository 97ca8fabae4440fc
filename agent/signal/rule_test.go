package signal_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/transcript"
	"github.com/chorus-dev/chorus/config"
)

const tag = "<chorus>COMPLETE</chorus>"

// ruleCase is one turn of an agent: its assistant messages in order, each
// but the last followed by a tool call whose output is tool. The last
// message ends the turn.
type ruleCase struct {
	cat, name string
	msgs      []string
	tool      string
	want      []string // what counts on the structured channels
	near      bool     // a near miss on the structured channels
	screen    []string // what counts on a custom agent's screen
}

// ruleCases is the one table of where a tag counts. Every channel that
// reads an agent's own words gives the structured answer (want, near);
// a custom agent's screen, which shows neither turns nor who wrote a
// line, gives its own (screen).
var ruleCases = []ruleCase{
	{cat: "counts", name: "alone after a sentence", msgs: []string{"Tests pass.\n" + tag}, want: c, screen: c},
	{cat: "counts", name: "after a sentence on its line", msgs: []string{"All done. " + tag}, want: c},
	{cat: "counts", name: "after an exclamation", msgs: []string{"Everything works! " + tag}, want: c},
	{cat: "counts", name: "after a blank line", msgs: []string{"Summary:\n- added Greet\n\n" + tag}, want: c, screen: c},
	{cat: "counts", name: "trailing period and newlines", msgs: []string{"Done.\n" + tag + ".\n\n"}, want: c, screen: c},
	{cat: "counts", name: "bold", msgs: []string{"All criteria met.\n\n**" + tag + "**"}, want: c, screen: c},
	{cat: "counts", name: "after a heading", msgs: []string{"## Result\n" + tag}, want: c, screen: c},
	{cat: "counts", name: "blocked with a payload", msgs: []string{"The sandbox has no network.\n\n<chorus>BLOCKED: no network</chorus>"}, want: []string{"BLOCKED: no network"}, screen: []string{"BLOCKED: no network"}},
	{cat: "counts", name: "wrapped over lines", msgs: []string{"The key is missing.\n<chorus>BLOCKED: the key is\nmissing</chorus>"}, want: []string{"BLOCKED: the key is missing"}, screen: []string{"BLOCKED: the key is missing"}},
	{cat: "counts", name: "nothing to change", msgs: []string{"<chorus>COMPLETE: nothing to change: already there</chorus>"}, want: []string{"COMPLETE: nothing to change: already there"}, screen: []string{"COMPLETE: nothing to change: already there"}},
	{cat: "counts", name: "earlier mention, final tag", msgs: []string{"I printed `<chorus>PROGRESS: 50</chorus>` before.\n\nAll done.\n" + tag}, want: c, screen: c},
	{cat: "counts", name: "progress then complete", msgs: []string{"<chorus>PROGRESS: 90</chorus>\nAll done.\n" + tag}, want: c, screen: []string{"PROGRESS: 90", "COMPLETE"}},
	{cat: "counts", name: "progress alone", msgs: []string{"Halfway.\n<chorus>PROGRESS: 50</chorus>"}, want: []string{"PROGRESS: 50"}, screen: []string{"PROGRESS: 50"}},
	{cat: "counts", name: "emoji before", msgs: []string{"🎉 All done!\n" + tag}, want: c, screen: c},
	{cat: "counts", name: "after a closed fence", msgs: []string{"Ran:\n```sh\nmake test\n```\nAll good. " + tag}, want: c},
	{cat: "negations", name: "will not print", msgs: []string{"The tests still fail, so this is NOT finished and I will not print " + tag}, near: true},
	{cat: "negations", name: "not yet, words after", msgs: []string{"I will not print " + tag + " yet."}, near: true},
	{cat: "negations", name: "on the next line", msgs: []string{"This is not done, so no\n" + tag}, near: true, screen: c},
	{cat: "negations", name: "in backticks", msgs: []string{"So this is NOT finished and I will not print `" + tag + "`"}, near: true},
	{cat: "negations", name: "a blank line between", msgs: []string{"This is not finished.\n\n" + tag}, near: true, screen: c},
	{cat: "negations", name: "haven't, then the tag", msgs: []string{"I haven't run the tests yet. " + tag}, near: true},
	{cat: "negations", name: "curly apostrophe", msgs: []string{"It doesn’t build on macOS.\n" + tag}, near: true, screen: c},
	{cat: "questions", name: "a blank line between", msgs: []string{"Does that cover it?\n\n" + tag}, near: true, screen: c},
	{cat: "plans", name: "introduced by a colon", msgs: []string{"Once CI is green I'll print:\n\n" + tag}, near: true, screen: c},
	{cat: "plans", name: "will, ending the turn", msgs: []string{"I will fix the lint next.\n" + tag}, near: true, screen: c},
	{cat: "plans", name: "list item still to do", msgs: []string{"Left:\n- [ ] the docs are still to do, not written yet\n\n" + tag}, near: true, screen: c},
	{cat: "counts", name: "past failure, fixed", msgs: []string{"I fixed the failing test. " + tag}, want: c},
	{cat: "counts", name: "courtesy above", msgs: []string{"Let me know if you need anything else.\n\n" + tag}, want: c, screen: c},
	{cat: "counts", name: "blocked after a negation", msgs: []string{"I cannot reach the network.\n<chorus>BLOCKED: no network</chorus>"}, want: []string{"BLOCKED: no network"}, screen: []string{"BLOCKED: no network"}},
	{cat: "counts", name: "colon-introduced list", msgs: []string{"Changes:\n- added Greet\n\n" + tag}, want: c, screen: c},
	{cat: "questions", name: "no question mark", msgs: []string{"Shall I finish now with " + tag}, near: true},
	{cat: "questions", name: "question mark after", msgs: []string{"Should I print " + tag + "?"}, near: true},
	{cat: "questions", name: "question above", msgs: []string{"Is this enough?\n" + tag}, near: true, screen: c},
	{cat: "questions", name: "runs on into the tag", msgs: []string{"Do you want me to print\n" + tag}, near: true, screen: c},
	{cat: "plans", name: "will print, then works", msgs: []string{"When the tests pass I will print\n" + tag, "The tests still fail; fixing them next."}, tool: "FAIL hello_test.go", screen: c},
	{cat: "plans", name: "counting form mid-turn", msgs: []string{"Tests pass.\n" + tag, "One more check: the linter."}, tool: "ok", screen: c},
	{cat: "plans", name: "plan, then done", msgs: []string{"I will print\n" + tag, "All done.\n" + tag}, tool: "ok", want: c, screen: c},
	{cat: "plans", name: "numbered plan", msgs: []string{"Plan:\n1. run tests\n2. print " + tag, "Working on step 1."}, tool: "ok"},
	{cat: "tool output", name: "a grep result ends with the tag", msgs: []string{"Let me look.", "Found it; still working."}, tool: "notes.md:3: " + tag},
	{cat: "tool output", name: "the tag alone in output", msgs: []string{"Let me look.", "Still working."}, tool: tag, screen: c},
	{cat: "code", name: "inline at the very end", msgs: []string{"All done. `" + tag + "`"}, near: true},
	{cat: "code", name: "inline mid-sentence", msgs: []string{"When done I print `" + tag + "` and stop."}, near: true},
	{cat: "code", name: "fenced at the very end", msgs: []string{"All done.\n```\n" + tag + "\n```"}, near: true},
	{cat: "code", name: "fenced with a language", msgs: []string{"Done:\n```text\n" + tag + "\n```\n"}, near: true},
	{cat: "code", name: "tilde fence", msgs: []string{"~~~md\nAll done. " + tag + "\n~~~"}, near: true},
	{cat: "code", name: "fence in a list", msgs: []string{"1. Protocol:\n   ```\n   " + tag + "\n   ```"}, near: true},
	{cat: "code", name: "unclosed fence", msgs: []string{"Output:\n```\n" + tag}, near: true},
	{cat: "code", name: "4-space indented", msgs: []string{"The tests still fail. The line would be:\n\n    " + tag}, near: true, screen: c},
	{cat: "code", name: "tab indented", msgs: []string{"Protocol:\n\n\t" + tag}, near: true, screen: c},
	{cat: "quotes", name: "double quotes", msgs: []string{`The protocol says to output "` + tag + `"`}, near: true},
	{cat: "quotes", name: "single quotes", msgs: []string{"It wants '" + tag + "'."}, near: true},
	{cat: "quotes", name: "curly quotes", msgs: []string{"It wants “" + tag + "”"}, near: true},
	{cat: "quotes", name: "block quote", msgs: []string{"The task says:\n> " + tag}, near: true},
	{cat: "quotes", name: "quoted after a sentence", msgs: []string{`Done. "` + tag + `"`}, near: true},
	{cat: "lists", name: "nested item", msgs: []string{"- [x] tests pass\n  - " + tag}, want: c, screen: c},
	{cat: "lists", name: "item after items", msgs: []string{"- [x] tests pass\n- " + tag}, want: c, screen: c},
	{cat: "lists", name: "numbered item", msgs: []string{"1. Tests pass.\n2. " + tag}, want: c},
	{cat: "lists", name: "item with words after", msgs: []string{"Remaining:\n- " + tag + " once CI is green"}, near: true},
	{cat: "emoji", name: "emoji after", msgs: []string{"All done. " + tag + " 🎉"}, near: true},
	{cat: "emoji", name: "emoji before on its line", msgs: []string{"All done ✅ " + tag}, near: true},
	{cat: "trailing", name: "sentence after on its line", msgs: []string{"All done. " + tag + " Let me know if you need anything else."}, near: true},
	{cat: "trailing", name: "paragraph after", msgs: []string{tag + "\n\nLet me know if you need anything else."}, near: true, screen: c},
	{cat: "trailing", name: "colon before", msgs: []string{"Finished, see above: " + tag + "."}, near: true},
	{cat: "mentions", name: "mid-sentence", msgs: []string{"I will print " + tag + " once tests pass."}, near: true},
	{cat: "mentions", name: "mention then more words", msgs: []string{"Remember: " + tag + " goes last"}, near: true},
	{cat: "invalid", name: "unknown type", msgs: []string{"Finished.\n<chorus>FINISHED</chorus>"}},
	{cat: "invalid", name: "progress in backticks", msgs: []string{"Progress is `<chorus>PROGRESS: 50</chorus>`"}},
	{cat: "none", name: "no tag", msgs: []string{"All done."}},
}

var c = []string{"COMPLETE"}

// outcome is what a channel made of a case.
type outcome struct {
	sigs []string
	near bool
}

func (o outcome) String() string {
	return fmt.Sprintf("%q near=%v", o.sigs, o.near)
}

func fromEvents(evs []signal.Event, o *outcome) {
	for _, ev := range evs {
		for _, s := range ev.Signals {
			o.sigs = append(o.sigs, s.String())
		}
		if ev.Verdict.NearMiss {
			o.near = true
		}
	}
}

func js(s string) string {
	b, _ := json.Marshal(s) // escapes < and > as \u003c, \u003e, as the CLIs may
	return string(b)
}

// cuts splits b into pieces that cut every tag in two, and long lines.
func cuts(b string) []string {
	var out []string
	for len(b) > 0 {
		n := min(len(b), 97)
		if i := strings.Index(b[:n], "chorus>"); i >= 0 && i+3 < n {
			n = i + 3
		} else if i := strings.Index(b[:n], `u003cchorus`); i >= 0 && i+5 < n {
			n = i + 5
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// streamed runs a headless CLI's output, cut mid-tag, through its parser.
func streamed(parse func([]byte) ([]signal.Event, error), lines []string) outcome {
	s := &signal.Stream{Parse: parse}
	var o outcome
	for _, piece := range cuts(strings.Join(lines, "\n") + "\n") {
		fromEvents(s.Feed([]byte(piece)), &o)
	}
	fromEvents(s.Flush(), &o)
	return o
}

func claudeStream(tc ruleCase) []string {
	lines := []string{`{"type":"system","subtype":"init","cwd":"/tmp/r","session_id":"s1"}`}
	for i, m := range tc.msgs {
		id := fmt.Sprintf("msg_%d", i)
		lines = append(lines, `{"type":"assistant","message":{"id":"`+id+`","role":"assistant","content":[{"type":"text","text":`+js(m)+`}],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}},"session_id":"s1"}`)
		if i < len(tc.msgs)-1 {
			lines = append(lines,
				`{"type":"assistant","message":{"id":"`+id+`","role":"assistant","content":[{"type":"tool_use","id":"tu_`+id+`","name":"Bash","input":{"command":"make test"}}],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":2}},"session_id":"s1"}`,
				`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"tu_`+id+`","type":"tool_result","content":`+js(tc.tool)+`}]},"session_id":"s1"}`)
		}
	}
	last := tc.msgs[len(tc.msgs)-1]
	return append(lines, `{"type":"result","subtype":"success","is_error":false,"result":`+js(last)+`,"session_id":"s1","total_cost_usd":0.001,"usage":{"input_tokens":2,"output_tokens":2}}`)
}

func codexExec(tc ruleCase) []string {
	lines := []string{`{"type":"thread.started","thread_id":"t1"}`, `{"type":"turn.started"}`}
	for i, m := range tc.msgs {
		lines = append(lines, fmt.Sprintf(`{"type":"item.completed","item":{"id":"item_%d","type":"agent_message","text":%s}}`, 2*i, js(m)))
		if i < len(tc.msgs)-1 {
			lines = append(lines,
				fmt.Sprintf(`{"type":"item.started","item":{"id":"item_%d","type":"command_execution","command":"bash -lc 'make test'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`, 2*i+1),
				fmt.Sprintf(`{"type":"item.completed","item":{"id":"item_%d","type":"command_execution","command":"bash -lc 'make test'","aggregated_output":%s,"exit_code":0,"status":"completed"}}`, 2*i+1, js(tc.tool+"\n")))
		}
	}
	return append(lines, `{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":1}}`)
}

func openCode(tc ruleCase) []string {
	var lines []string
	for i, m := range tc.msgs {
		msg := fmt.Sprintf("msg_%d", i)
		lines = append(lines,
			`{"type":"step_start","sessionID":"ses_1","part":{"id":"prt_s`+msg+`","messageID":"`+msg+`","type":"step-start"}}`,
			`{"type":"text","sessionID":"ses_1","part":{"id":"prt_t`+msg+`","messageID":"`+msg+`","type":"text","text":`+js(m)+`,"time":{"start":1,"end":2}}}`)
		reason := "stop"
		if i < len(tc.msgs)-1 {
			reason = "tool-calls"
			lines = append(lines, `{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"c`+msg+`","messageID":"`+msg+`","state":{"status":"completed","input":{"command":"make test"},"output":`+js(tc.tool)+`}}}`)
		}
		lines = append(lines, `{"type":"step_finish","sessionID":"ses_1","part":{"id":"prt_f`+msg+`","messageID":"`+msg+`","type":"step-finish","reason":"`+reason+`","tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0}}`)
	}
	return lines
}

// recorded writes session records in pieces cut mid-tag, reading the
// agent's records with the real transcript reader after each piece.
func recorded(t *testing.T, kind string, env []string, dir, file string, lines []string, since time.Time) outcome {
	t.Helper()
	r, err := transcript.New(transcript.Options{Kind: kind, Env: env, Dir: dir, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var o outcome
	take := func(u transcript.Update) {
		for _, s := range u.Signals {
			o.sigs = append(o.sigs, s.String())
		}
		if len(u.NearMisses) > 0 {
			o.near = true
		}
	}
	for _, piece := range cuts(strings.Join(lines, "\n") + "\n") {
		if _, err := f.WriteString(piece); err != nil {
			t.Fatal(err)
		}
		take(r.Read())
	}
	take(r.Final())
	return o
}

func claudeTranscript(t *testing.T, tc ruleCase) outcome {
	home, cwd := t.TempDir(), t.TempDir()
	since := time.Now()
	ts := js(since.Add(time.Second).UTC().Format(time.RFC3339Nano))
	line := func(id, stop, content string) string {
		return `{"type":"assistant","isSidechain":false,"sessionId":"s1","timestamp":` + ts + `,"message":{"id":"` + id + `","model":"claude-sonnet-4-5","role":"assistant","content":[` + content + `],"stop_reason":"` + stop + `","usage":{"input_tokens":1,"output_tokens":1}}}`
	}
	lines := []string{`{"type":"user","isSidechain":false,"sessionId":"s1","timestamp":` + ts + `,"message":{"role":"user","content":"do the task"}}`}
	for i, m := range tc.msgs {
		id := fmt.Sprintf("msg_%d", i)
		text := `{"type":"text","text":` + js(m) + `}`
		if i == len(tc.msgs)-1 {
			lines = append(lines, line(id, "end_turn", text))
			continue
		}
		lines = append(lines, line(id, "tool_use", text), line(id, "tool_use", `{"type":"tool_use","id":"tu_`+id+`","name":"Bash","input":{"command":"make test"}}`),
			`{"type":"user","isSidechain":false,"sessionId":"s1","timestamp":`+ts+`,"message":{"role":"user","content":[{"tool_use_id":"tu_`+id+`","type":"tool_result","content":`+js(tc.tool)+`}]}}`)
	}
	file := filepath.Join(home, ".claude", "projects", transcript.ProjectDirName(cwd), "s1.jsonl")
	return recorded(t, config.TranscriptClaude, []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}, cwd, file, lines, since)
}

func codexRollout(t *testing.T, tc ruleCase) outcome {
	home, cwd := t.TempDir(), t.TempDir()
	since := time.Now()
	ts := js(since.Add(time.Second).UTC().Format(time.RFC3339Nano))
	ev := func(typ, payload string) string {
		return `{"timestamp":` + ts + `,"type":"` + typ + `","payload":` + payload + `}`
	}
	lines := []string{
		ev("session_meta", `{"id":"s1","cwd":`+js(cwd)+`,"cli_version":"0.169.0"}`),
		ev("event_msg", `{"type":"task_started","turn_id":"t1"}`),
		ev("response_item", `{"type":"message","id":"u1","role":"user","content":[{"type":"input_text","text":"do the task"}]}`),
	}
	for i, m := range tc.msgs {
		lines = append(lines, ev("response_item", fmt.Sprintf(`{"type":"message","status":"completed","id":"msg_%d","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}`, i, js(m))))
		if i < len(tc.msgs)-1 {
			lines = append(lines,
				ev("response_item", fmt.Sprintf(`{"type":"function_call","id":"fc_%d","name":"exec_command","arguments":"{\"cmd\":\"make test\"}","call_id":"call_%d"}`, i, i)),
				ev("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":%s}`, i, js("Output:\n"+tc.tool+"\n"))))
		}
		lines = append(lines, ev("event_msg", fmt.Sprintf(`{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d}}}`, 10*(i+1), i+1)))
	}
	lines = append(lines, ev("event_msg", `{"type":"task_complete","turn_id":"t1","last_agent_message":`+js(tc.msgs[len(tc.msgs)-1])+`}`))
	day := since.UTC()
	file := filepath.Join(home, ".codex", "sessions", day.Format("2006"), day.Format("01"), day.Format("02"), "rollout-test.jsonl")
	return recorded(t, config.TranscriptCodex, []string{"HOME=" + home, "CODEX_HOME="}, cwd, file, lines, since)
}

// screenText is a custom agent's terminal: its messages, the commands it
// runs and their output.
func screenText(tc ruleCase) string {
	var b strings.Builder
	b.WriteString("$ my-agent --task ch-12\n")
	for i, m := range tc.msgs {
		b.WriteString(m + "\n")
		if i < len(tc.msgs)-1 {
			b.WriteString("$ make test\n" + tc.tool + "\n")
		}
	}
	b.WriteString("$ ")
	return b.String()
}

const screenPrompt = "Implement Greet. When ALL criteria are met, output exactly: <chorus>COMPLETE</chorus>"

var structured = []struct {
	name string
	run  func(t *testing.T, tc ruleCase) outcome
}{
	{"claude stream-json", func(t *testing.T, tc ruleCase) outcome {
		return streamed((&signal.ClaudeParser{}).Parse, claudeStream(tc))
	}},
	{"codex exec", func(t *testing.T, tc ruleCase) outcome { return streamed((&signal.CodexParser{}).Parse, codexExec(tc)) }},
	{"opencode run", func(t *testing.T, tc ruleCase) outcome {
		return streamed((&signal.OpenCodeParser{}).Parse, openCode(tc))
	}},
	{"claude transcript", claudeTranscript},
	{"codex rollout", codexRollout},
}

var screens = []struct {
	name string
	run  func(text string) []string
}{
	{"screen stream", func(text string) []string {
		d := signal.NewDetector(signal.DetectorOptions{Prompts: []string{screenPrompt}})
		var got []signal.Found
		for _, p := range cuts(text) {
			got = append(got, d.Append(p)...)
		}
		return foundSigs(append(got, d.Flush()...))
	}},
	{"screen snapshot", func(text string) []string {
		d := signal.NewDetector(signal.DetectorOptions{Prompts: []string{screenPrompt}})
		var got []signal.Found
		for i := 0; i < 3; i++ { // repaints
			got = append(got, d.Snapshot(text)...)
		}
		return foundSigs(got)
	}},
}

func foundSigs(fs []signal.Found) []string {
	var out []string
	for _, f := range fs {
		if f.Err == nil {
			out = append(out, f.Signal.String())
		}
	}
	return out
}

// TestTagRuleEveryChannel runs every case through every channel's reader,
// each fed its CLI's own format in pieces that cut the tags in two.
func TestTagRuleEveryChannel(t *testing.T) {
	if len(ruleCases) < 40 {
		t.Fatalf("%d cases", len(ruleCases))
	}
	for _, tc := range ruleCases {
		want := outcome{sigs: tc.want, near: tc.near}
		t.Run(tc.cat+"/"+tc.name, func(t *testing.T) {
			// The rule itself, on the turn's final message.
			v := signal.InMessage(tc.msgs[len(tc.msgs)-1])
			var got outcome
			for _, s := range v.Signals() {
				got.sigs = append(got.sigs, s.String())
			}
			got.near = v.NearMiss
			if got.String() != want.String() {
				t.Errorf("InMessage: got %v, want %v (reason %q)", got, want, v.Reason)
			}
			if v.NearMiss && (v.Reason == "" || v.Missed.Raw == "") {
				t.Errorf("a near miss without its tag or reason: %+v", v)
			}
			for _, ch := range structured {
				if got := ch.run(t, tc); got.String() != want.String() {
					t.Errorf("%s: got %v, want %v", ch.name, got, want)
				}
			}
			for _, ch := range screens {
				if got := ch.run(screenText(tc)); strings.Join(got, "|") != strings.Join(tc.screen, "|") {
					t.Errorf("%s: got %q, want %q\n%s", ch.name, got, tc.screen, screenText(tc))
				}
			}
		})
	}
}
