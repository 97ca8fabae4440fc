// Package clitest gets the real agent CLIs for tests and prepares their
// offline environment: pinned npm packages installed into the repository's
// git-ignored .tools/npm, and a throwaway HOME with the first-run dialogs
// answered, pointed at a local model server. Test code only.
package clitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/chorus-dev/chorus/agent/claudetrust"
)

// Pinned versions, verified offline against internal/modelserver.
const (
	ClaudeCodeVersion = "2.1.330"
	CodexVersion      = "0.169.0"
	OpenCodeVersion   = "1.18.33"
)

var packages = []struct{ name, version, bin string }{
	{"@anthropic-ai/claude-code", ClaudeCodeVersion, "claude"},
	{"@openai/codex", CodexVersion, "codex"},
	{"opencode-ai", OpenCodeVersion, "opencode"},
}

// Tools are the installed CLIs.
type Tools struct {
	Claude, Codex, OpenCode string // absolute paths
}

var (
	once     sync.Once
	tools    Tools
	toolsErr error
)

// RepoRoot is the root of this module's checkout.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// Install makes sure the pinned CLIs are in <repo>/.tools/npm (or
// $CHORUS_TOOLS_DIR, so several checkouts can share one copy), running npm
// when one is missing or at another version. An error means they cannot
// be had (no npm, no registry); callers skip with it.
func Install() (Tools, error) {
	prefix := os.Getenv("CHORUS_TOOLS_DIR")
	if prefix == "" {
		prefix = filepath.Join(RepoRoot(), ".tools", "npm")
	}
	once.Do(func() { tools, toolsErr = install(prefix) })
	return tools, toolsErr
}

func install(prefix string) (Tools, error) {
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return Tools{}, err
	}
	// Test binaries of several packages may get here at once.
	lock, err := os.OpenFile(filepath.Join(prefix, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return Tools{}, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Tools{}, err
	}
	var missing []string
	for _, p := range packages {
		if installedVersion(prefix, p.name) != p.version || !executable(filepath.Join(prefix, "node_modules", ".bin", p.bin)) {
			missing = append(missing, p.name+"@"+p.version)
		}
	}
	if len(missing) > 0 {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return Tools{}, errors.New("npm is not installed; it is needed to fetch " + strings.Join(missing, ", "))
		}
		args := append([]string{"install", "--prefix", prefix, "--save-exact", "--no-audit", "--no-fund", "--loglevel=error"}, missing...)
		announce(fmt.Sprintf("installing %s with npm into %s for the end-to-end tests (about 1 GB, once; set CHORUS_TOOLS_DIR to share a copy)", strings.Join(missing, ", "), prefix))
		cmd := exec.Command(npm, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return Tools{}, fmt.Errorf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bin := filepath.Join(prefix, "node_modules", ".bin")
	t := Tools{Claude: filepath.Join(bin, "claude"), Codex: filepath.Join(bin, "codex"), OpenCode: filepath.Join(bin, "opencode")}
	for _, p := range []string{t.Claude, t.Codex, t.OpenCode} {
		if !executable(p) {
			return Tools{}, fmt.Errorf("%s missing after npm install (platform package not installed?)", p)
		}
	}
	return t, nil
}

func installedVersion(prefix, name string) string {
	b, err := os.ReadFile(filepath.Join(prefix, "node_modules", filepath.FromSlash(name), "package.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal(b, &p)
	return p.Version
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// APIKey is the key the CLIs are given; the model server ignores it.
const APIKey = "sk-ant-test-0123456789abcdefghijklmnop"

// ClaudeHome writes a throwaway HOME for Claude Code with its first-run
// dialogs answered (onboarding, the custom API key, the bypass-permissions
// warning) and returns the environment for a child pointed at baseURL.
// No folder is trusted: the interactive CLI asks before working in one
// unless TrustDirs named it (or Chorus's trustWorktrees did).
func ClaudeHome(home, baseURL string) ([]string, error) {
	key := APIKey[len(APIKey)-20:]
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{key}, "rejected": []string{}},
		"autoUpdates":            false,
	}
	if err := writeJSON(filepath.Join(home, ".claude.json"), cfg); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(home, ".claude", "settings.json"), map[string]any{"skipDangerousModePermissionPrompt": true}); err != nil {
		return nil, err
	}
	tmp := filepath.Join(home, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	return []string{
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=" + APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"IS_SANDBOX=1",
		"CLAUDE_CODE_TMPDIR=" + tmp,
	}, nil
}

// OpenCodeHome prepares a throwaway home for opencode pointed at the model
// server's Anthropic Messages API (as provider "fake", model "fake/m",
// priced $3/$15 per million tokens so cost is reported) and returns the
// child's environment.
func OpenCodeHome(home, baseURL string) ([]string, error) {
	cfg := map[string]any{
		"model": "fake/m",
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/anthropic", "name": "fake",
			"options": map[string]any{"baseURL": baseURL + "/v1", "apiKey": "sk-test"},
			"models":  map[string]any{"m": map[string]any{"name": "m", "cost": map[string]any{"input": 3, "output": 15}}},
		}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	x := filepath.Join(home, ".opencode-xdg")
	env := []string{"HOME=" + home, "OPENCODE_CONFIG_CONTENT=" + string(b),
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", `OPENCODE_PERMISSION={"*":"allow"}`}
	for _, d := range []struct{ k, v string }{{"XDG_CONFIG_HOME", "config"}, {"XDG_DATA_HOME", "data"}, {"XDG_CACHE_HOME", "cache"}, {"XDG_STATE_HOME", "state"}} {
		p := filepath.Join(x, d.v)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
		env = append(env, d.k+"="+p)
	}
	return env, nil
}

// TrustDirs marks exactly these folders trusted in the Claude Code home
// that ClaudeHome wrote, as a user who answered its trust dialog there.
func TrustDirs(home string, dirs ...string) error {
	for _, d := range dirs {
		if err := claudetrust.Trust(filepath.Join(home, ".claude.json"), d); err != nil {
			return err
		}
	}
	return nil
}

// CodexHome writes a throwaway CODEX_HOME whose default provider is the
// model server's Responses API, and returns the child's environment.
func CodexHome(home, baseURL string) ([]string, error) {
	ch := filepath.Join(home, ".codex")
	if err := os.MkdirAll(ch, 0o755); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`model = "gpt-5-codex"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
env_key = "FAKE_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, baseURL)
	if err := os.WriteFile(filepath.Join(ch, "config.toml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return []string{"HOME=" + home, "CODEX_HOME=" + ch, "FAKE_KEY=sk-test"}, nil
}

// TrustCodexDirs marks folders trusted in the Codex home CodexHome wrote
// (for a folder in a git repository, Codex asks about the repository's
// root), as a user who answered its trust dialog there.
func TrustCodexDirs(home string, dirs ...string) error {
	f, err := os.OpenFile(filepath.Join(home, ".codex", "config.toml"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, d := range dirs {
		if _, err := fmt.Fprintf(f, "\n[projects.%q]\ntrust_level = \"trusted\"\n", d); err != nil {
			return err
		}
	}
	return nil
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// announce says at once what a long step is doing. go test holds a
// passing package's output until it ends, so the line goes to the
// controlling terminal when there is one, else to stderr.
func announce(line string) {
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprintln(tty, "chorus tests:", line)
		tty.Close()
		return
	}
	fmt.Fprintln(os.Stderr, "chorus tests:", line)
}
