package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsValid(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	// A conflict resolver gets far less time than a task's agent.
	if r := d.Merge.ResolverTimeoutMinutes; r < 1 || r*2 > d.Agents.TimeoutMinutes {
		t.Fatalf("merge.resolverTimeoutMinutes %d against agents.timeoutMinutes %d", r, d.Agents.TimeoutMinutes)
	}
}

func TestLoadLayers(t *testing.T) {
	dir := t.TempDir()
	user := write(t, dir, "user/config.json", `{"agents":{"maxParallel":5,"timeoutMinutes":12},"tui":{"agentGrid":"2x2"}}`)
	proj := write(t, dir, "p/config.json", `{"mode":"autopilot","agents":{"maxParallel":4},
	  "qualityCommands":[{"name":"test","command":"go test ./...","required":true,"order":2},{"name":"vet","command":"go vet ./...","required":false,"order":1}]}`)
	l, err := load(proj, user, []string{"CHORUS_AGENTS_TIMEOUTMINUTES=7", "CHORUS_COMPLETION_MAXITERATIONS=9", "OTHER=1"})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.Mode != ModeAutopilot || c.Agents.MaxParallel != 4 {
		t.Errorf("project values lost: %+v", c.Agents)
	}
	if c.TUI.AgentGrid != "2x2" {
		t.Errorf("user default lost: %q", c.TUI.AgentGrid)
	}
	if c.Agents.TimeoutMinutes != 7 || c.Completion.MaxIterations != 9 {
		t.Errorf("env override lost: %d %d", c.Agents.TimeoutMinutes, c.Completion.MaxIterations)
	}
	if c.Agents.Default != "claude" || c.Completion.TaskTimeout != 30 || c.Planning.MaxReviewIterations != 3 || c.Hooks.TimeoutSeconds != 30 {
		t.Errorf("built-in defaults lost: %+v", c.Completion)
	}
	if _, ok := c.Profile("claude"); !ok {
		t.Error("builtin claude profile missing")
	}
	q := c.SortedQuality()
	if len(q) != 2 || q[0].Name != "vet" {
		t.Errorf("quality order: %+v", q)
	}
	if l.UserPath != user || len(l.Warnings) != 0 {
		t.Errorf("user path %q warnings %v", l.UserPath, l.Warnings)
	}
}

func TestLoadCustomAgentKeepsEnvCase(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "config.json", `{"agents":{"default":"mine","available":{"mine":{"command":"my-agent","args":["--go"],"env":["MY_KEY=Value"]}}}}`)
	l, err := load(p, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	pr, ok := l.Profile("mine")
	if !ok || pr.Command != "my-agent" || len(pr.Env) != 1 || pr.Env[0] != "MY_KEY=Value" {
		t.Fatalf("profile %+v", pr)
	}
	if _, ok := l.Profile("codex"); !ok {
		t.Error("builtins must stay next to custom profiles")
	}
}

func TestMalformedJSONGivesLineAndColumn(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "config.json", "{\n  \"mode\": \"semi-auto\",\n  \"agents\": {\"maxParallel\": 3,}\n}\n")
	_, err := load(p, "", nil)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("want SyntaxError, got %v", err)
	}
	if se.Line != 3 || !strings.Contains(err.Error(), p+":3:") {
		t.Fatalf("position: %v", err)
	}
}

func TestEmptyAndNonObjectFiles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"empty.json": "  \n", "array.json": "[1,2]"} {
		_, err := load(write(t, dir, name, body), "", nil)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%s: want SyntaxError, got %v", name, err)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := load(filepath.Join(t.TempDir(), "nope.json"), "", nil)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "chorus init") {
		t.Fatalf("got %v", err)
	}
}

func TestValidationNamesFieldValueAllowed(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ body, want string }{
		"mode":                {`{"mode":"turbo"}`, `mode: "turbo" is not valid; allowed: semi-auto, autopilot`},
		"zero":                {`{"agents":{"maxParallel":0}}`, `agents.maxParallel: 0 is not valid; allowed: an integer from 1 to 32`},
		"negative":            {`{"agents":{"maxParallel":-2}}`, `agents.maxParallel: -2`},
		"scrollback-small":    {`{"agents":{"scrollback":10}}`, `agents.scrollback: 10 is not valid`},
		"scrollback-negative": {`{"agents":{"scrollback":-1}}`, `agents.scrollback: -1 is not valid; allowed: rows of history per agent terminal, from 1000 to 1000000 (10000 by default)`},
		"scrollback-huge":     {`{"agents":{"scrollback":5000000}}`, `agents.scrollback: 5000000 is not valid`},
		"scrollback-string":   {`{"agents":{"scrollback":"10k"}}`, `agents.scrollback must be a whole number`},
		"default":             {`{"agents":{"default":"nobody"}}`, `agents.default: "nobody" is not valid; allowed: one of agents.available`},
		"grid":                {`{"tui":{"agentGrid":"big"}}`, `tui.agentGrid: "big"`},
		"quality":             {`{"qualityCommands":[{"name":"t","command":""}]}`, `qualityCommands[0].command`},
		"string":              {`{"agents":{"maxParallel":"lots"}}`, `agents.maxParallel must be a whole number`},
		"resolver":            {`{"merge":{"resolverTimeoutMinutes":0}}`, `merge.resolverTimeoutMinutes: 0 is not valid; allowed: minutes, 1 or more`},
		"transcript": {`{"agents":{"available":{"claude":{"command":"claude","transcript":"gemini"}}}}`,
			`agents.available.claude.transcript: "gemini" is not valid; allowed: "" (from the command), claude, codex, none`},
		"trust":   {`{"agents":{"available":{"aider":{"command":"aider","trustWorktrees":true}}}}`, `agents.available.aider.trustWorktrees: true is not valid; allowed: only for an interactive Claude Code or Codex agent`},
		"trustcx": {`{"agents":{"available":{"codex-headless":{"command":"codex","format":"codex-json","trustWorktrees":true}}}}`, `agents.available.codex-headless.trustWorktrees`},
		"trusthl": {`{"agents":{"available":{"claude-headless":{"command":"claude","format":"claude-stream-json","trustWorktrees":true}}}}`, `agents.available.claude-headless.trustWorktrees`},
		"review":  {`{"planning":{"maxReviewIterations":-1}}`, `planning.maxReviewIterations: -1 is not valid; allowed: an integer from 0 (validate only) to 20`},
		"hooks":   {`{"hooks":{"timeoutSeconds":0}}`, `hooks.timeoutSeconds: 0 is not valid; allowed: seconds, from 1 to 3600`},
	}
	for name, c := range cases {
		_, err := load(write(t, dir, name+".json", c.body), "", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %q in error, got %v", name, c.want, err)
		}
	}
}

// Interactive profiles read claude/codex session records, by command name
// unless the profile says; headless profiles and custom agents read none.
func TestTranscriptKind(t *testing.T) {
	for _, tc := range []struct {
		p    AgentProfile
		want string
	}{
		{AgentProfile{Command: "claude"}, TranscriptClaude},
		{AgentProfile{Command: "/opt/npm/.bin/codex"}, TranscriptCodex},
		{AgentProfile{Command: "claude", Format: FormatClaudeJSON}, ""},
		{AgentProfile{Command: "my-agent"}, ""},
		{AgentProfile{Command: "my-claude-wrapper", Transcript: TranscriptClaude}, TranscriptClaude},
		{AgentProfile{Command: "claude", Transcript: TranscriptNone}, ""},
	} {
		if got := tc.p.TranscriptKind(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
	if p := BuiltinAgents()["opencode"]; p.Format != FormatOpenCode {
		t.Errorf("opencode profile format %q", p.Format)
	}
}

func TestUnknownKeysWarn(t *testing.T) {
	p := write(t, t.TempDir(), "config.json", `{"mode":"semi-auto","colour":"blue","agents":{"maxParalel":4}}`)
	l, err := load(p, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(l.Warnings, "\n")
	if !strings.Contains(got, `"colour"`) || !strings.Contains(got, `"agents.maxParalel"`) {
		t.Fatalf("warnings: %v", l.Warnings)
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".chorus", "config.json")
	c := Default()
	c.Project.Name = "x"
	c.QualityCommands = []QualityCommand{{Name: "test", Command: "go test ./...", Required: true, Order: 1}}
	if err := Save(p, c); err != nil {
		t.Fatal(err)
	}
	l, err := load(p, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 || l.Project.Name != "x" || len(l.QualityCommands) != 1 {
		t.Fatalf("%+v %v", l.Config.Project, l.Warnings)
	}
}

func TestDetect(t *testing.T) {
	cases := []struct{ file, body, typ, name, firstQ string }{
		{"go.mod", "module example.com/acme/widget\n\ngo 1.22\n", "go", "widget", "go build ./..."},
		{"package.json", `{"name":"shop","scripts":{"test":"jest","lint":"eslint ."}}`, "node", "shop", "npm run lint"},
		{"pyproject.toml", "[build-system]\nname = \"x\"\n[project]\nname = \"pyapp\"\n", "python", "pyapp", "python -m pytest"},
		{"Cargo.toml", "[package]\nname = \"crab\"\n", "rust", "crab", "cargo build"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		write(t, dir, c.file, c.body)
		d := Detect(dir)
		if d.Type != c.typ || d.Name != c.name || len(d.Quality) == 0 || d.Quality[0].Command != c.firstQ {
			t.Errorf("%s: %+v", c.file, d)
		}
	}
	d := Detect(t.TempDir())
	if d.Type != "unknown" || d.Name == "" {
		t.Errorf("empty dir: %+v", d)
	}
}

func TestPrefixFor(t *testing.T) {
	for in, want := range map[string]string{"my-awesome-app": "maa", "chorus": "cho", "x": "x", "9lives": "ch9li"} {
		if got := PrefixFor(in); got != want {
			t.Errorf("PrefixFor(%q)=%q want %q", in, got, want)
		}
	}
}

func TestInstallIdempotentKeepsEdits(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".gitignore", "node_modules/")
	r1, err := Install(root, Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".chorus/config.json", ".chorus/task-rules.md", ".chorus/PATTERNS.md", ".chorus/planning-state.json",
		".chorus/prompts/plan-agent.md", ".chorus/prompts/impl-agent.md", ".chorus/hooks/README.md", ".agent/learnings.md"} {
		if _, err := os.Stat(filepath.Join(root, want)); err != nil {
			t.Errorf("missing %s", want)
		}
	}
	if len(r1.Existing) != 0 || len(r1.GitignoreAdded) != len(GitignoreEntries) {
		t.Errorf("first run: %+v", r1)
	}
	write(t, root, ".chorus/PATTERNS.md", "mine\n")
	r2, err := Install(root, Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Created) != 0 || len(r2.GitignoreAdded) != 0 || len(r2.Existing) != len(r1.Created) {
		t.Errorf("second run: %+v", r2)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".chorus/PATTERNS.md")); string(b) != "mine\n" {
		t.Error("user edit overwritten")
	}
	gi, _ := os.ReadFile(filepath.Join(root, ".gitignore"))
	if strings.Count(string(gi), ".worktrees/") != 1 || !strings.HasPrefix(string(gi), "node_modules/\n") {
		t.Errorf(".gitignore: %q", gi)
	}
}

// Values of the wrong type are errors naming the field and its place,
// never coerced.
func TestLoadStrictTypes(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ body, want string }{
		"bool-for-int":   {`{"agents":{"maxParallel":true}}`, `:1:30: agents.maxParallel must be a whole number such as 3 (no quotes, no fraction), found bool`},
		"float-for-int":  {`{"agents":{"maxParallel":2.5}}`, `agents.maxParallel must be a whole number such as 3 (no quotes, no fraction), found number 2.5`},
		"hex-string":     {`{"agents":{"maxParallel":"0x2"}}`, `agents.maxParallel must be a whole number such as 3 (no quotes, no fraction), found string`},
		"int-for-bool":   {"{\n  \"merge\": {\"autoResolve\": 1}}", `:2:29: merge.autoResolve must be true or false (no quotes), found number`},
		"int-for-string": {`{"mode":1}`, `mode must be a string in double quotes, found number`},
		"list-for-obj":   {`{"budget":[]}`, `budget must be an object in { }, found array`},
	}
	for name, c := range cases {
		_, err := load(write(t, dir, name+".json", c.body), "", nil)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %q in error, got %v", name, c.want, err)
		}
	}
	// The user-level file is checked the same way.
	user := write(t, dir, "user.json", `{"completion":{"maxIterations":"9"}}`)
	if _, err := load(write(t, dir, "ok.json", `{}`), user, nil); err == nil || !strings.Contains(err.Error(), user+":1:") ||
		!strings.Contains(err.Error(), "completion.maxIterations must be a whole number") {
		t.Errorf("user file: %v", err)
	}
	// Environment overrides: text that is a whole number is fine, 2.5 or
	// words are not.
	p := write(t, dir, "env.json", `{}`)
	if l, err := load(p, "", []string{"CHORUS_AGENTS_MAXPARALLEL=4", "CHORUS_MERGE_AUTORESOLVE=false"}); err != nil || l.Agents.MaxParallel != 4 || l.Merge.AutoResolve {
		t.Errorf("env overrides: %v %+v", err, l)
	}
	for env, want := range map[string]string{
		"CHORUS_AGENTS_MAXPARALLEL=2.5":  "agents.maxParallel must be a whole number",
		"CHORUS_AGENTS_MAXPARALLEL=lots": "CHORUS_AGENTS_MAXPARALLEL=\"lots\": expected a number",
		"CHORUS_MERGE_AUTORESOLVE=1x":    "CHORUS_MERGE_AUTORESOLVE=\"1x\": expected true or false",
	} {
		if _, err := load(p, "", []string{env}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want %q, got %v", env, want, err)
		}
	}
}

// A UTF-8 byte order mark, as some editors write, is accepted.
func TestLoadAcceptsBOM(t *testing.T) {
	p := write(t, t.TempDir(), "config.json", "\xEF\xBB\xBF{\"mode\":\"autopilot\"}")
	l, err := load(p, "", nil)
	if err != nil || l.Mode != ModeAutopilot {
		t.Fatalf("BOM: %v %+v", err, l)
	}
	if _, err := ReadJSONObject(p); err != nil {
		t.Fatalf("ReadJSONObject with BOM: %v", err)
	}
}

// trustWorktrees is off unless asked for, and loads for the Claude Code
// terminal profile.
func TestTrustWorktrees(t *testing.T) {
	if p, _ := Default().Profile("claude"); p.TrustWorktrees {
		t.Fatal("trustWorktrees must default to off")
	}
	dir := t.TempDir()
	l, err := load(write(t, dir, "c.json", `{"agents":{"available":{"claude":{"command":"claude","trustWorktrees":true}}}}`), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := l.Profile("claude"); !p.TrustWorktrees {
		t.Fatalf("profile %+v", p)
	}
}

// tui.notify is off unless asked for.
func TestNotifyOffByDefault(t *testing.T) {
	if Default().TUI.Notify {
		t.Fatal("desktop notifications on by default")
	}
	dir := t.TempDir()
	proj := write(t, dir, "p/config.json", `{"tui":{"notify":true}}`)
	l, err := load(proj, filepath.Join(dir, "none.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Config.TUI.Notify {
		t.Fatal("tui.notify true was not read")
	}
}

// notify.webhook and notify.ntfy take http(s) URLs with a host, or nothing.
func TestNotifyURLsValidated(t *testing.T) {
	for _, c := range []struct {
		webhook, ntfy string
		bad           []string
	}{
		{"", "", nil},
		{"https://hooks.example.com/chorus", "http://127.0.0.1:8080/night", nil},
		{"https://user:tok@ntfy.example.com/t", "", nil},
		{"hooks.example.com/chorus", "", []string{"notify.webhook"}},
		{"", "ftp://ntfy.example.com/t", []string{"notify.ntfy"}},
		{"https:///nohost", "ntfy", []string{"notify.webhook", "notify.ntfy"}},
	} {
		cfg := Default()
		cfg.Notify = Notify{Webhook: c.webhook, Ntfy: c.ntfy}
		err := cfg.Validate()
		var got []string
		var ve *ValidationError
		if errors.As(err, &ve) {
			for _, f := range ve.Fields {
				got = append(got, f.Field)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.bad, ",") {
			t.Errorf("webhook %q ntfy %q: bad fields %v, want %v (%v)", c.webhook, c.ntfy, got, c.bad, err)
		}
	}
}
