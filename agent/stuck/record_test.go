package stuck_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/internal/clitest"
	"github.com/chorus-dev/chorus/internal/modelserver"
)

// TestRecordScreens runs the real CLIs under a PTY (120x40) into each
// stuck situation and writes every distinct screen to
// $CHORUS_RECORD_SCREENS/<scenario>/, from which testdata was picked:
//
//	CHORUS_TOOLS_DIR=/work/tools/npm CHORUS_RECORD_SCREENS=/tmp/screens go test ./agent/stuck -run TestRecordScreens -v -timeout 30m
func TestRecordScreens(t *testing.T) {
	out := os.Getenv("CHORUS_RECORD_SCREENS")
	if out == "" {
		t.Skip("set CHORUS_RECORD_SCREENS=<dir> to record")
	}
	tools, err := clitest.Install()
	if err != nil {
		t.Skip(err)
	}
	for _, sc := range []struct {
		name string
		dur  time.Duration
	}{
		{"claude-login", 45 * time.Second}, {"claude-notrust", 45 * time.Second}, {"claude-talk", 45 * time.Second},
		{"claude-500", 4 * time.Minute}, {"claude-429", 4 * time.Minute}, {"claude-dead", 4 * time.Minute},
		{"codex-500", 60 * time.Second}, {"codex-retry500", 60 * time.Second}, {"codex-dead", 60 * time.Second},
		{"codex-login", 60 * time.Second}, {"codex-trust", 60 * time.Second},
	} {
		t.Run(sc.name, func(t *testing.T) { record(t, tools, sc.name, sc.dur, filepath.Join(out, sc.name)) })
	}
}

func record(t *testing.T, tools clitest.Tools, scen string, dur time.Duration, out string) {
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	home, cwd := t.TempDir(), t.TempDir()
	url := srv.URL
	if strings.HasSuffix(scen, "dead") {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		url = "http://" + ln.Addr().String()
		ln.Close()
	}
	var argv, env []string
	if strings.HasPrefix(scen, "claude") {
		env, _ = clitest.ClaudeHome(home, url)
		argv = []string{tools.Claude, "--dangerously-skip-permissions", "say hello please"}
		if scen != "claude-notrust" {
			clitest.TrustDirs(home, cwd)
		}
		if scen == "claude-login" {
			env = append(env, "ANTHROPIC_API_KEY=")
		}
	} else {
		env, _ = clitest.CodexHome(home, url)
		argv = []string{tools.Codex, "--dangerously-bypass-approvals-and-sandbox", "say hello please"}
		if scen == "codex-trust" {
			exec.Command("git", "-C", cwd, "init", "-q").Run()
			cwd = filepath.Join(cwd, "sub")
			os.MkdirAll(cwd, 0o755)
		} else {
			clitest.TrustCodexDirs(home, cwd)
		}
		if scen == "codex-retry500" { // codex's default retries
			p := filepath.Join(home, ".codex", "config.toml")
			b, _ := os.ReadFile(p)
			s := strings.NewReplacer("request_max_retries = 0", "request_max_retries = 4", "stream_max_retries = 0", "stream_max_retries = 5").Replace(string(b))
			os.WriteFile(p, []byte(s), 0o644)
		}
		if scen == "codex-login" {
			env = append(env, "FAKE_KEY=")
		}
	}
	switch {
	case strings.HasSuffix(scen, "500"):
		srv.Add(modelserver.Script{After: &modelserver.Turn{Status: 500}})
	case strings.HasSuffix(scen, "429"):
		srv.Add(modelserver.Script{After: &modelserver.Turn{Status: 429}})
	case strings.HasSuffix(scen, "talk"):
		srv.Add(modelserver.Script{After: &modelserver.Turn{Text: "Here is the handler:\n\n```go\nif resp.StatusCode == 500 {\n\treturn fmt.Errorf(\"API Error: 500 Internal server error\")\n}\n```\nIt reports API Error: 500 and Not logged in · Please run /login when the key is missing; also Connection refused."}})
	default:
		srv.Add(modelserver.Script{After: &modelserver.Turn{Text: "Hello!"}})
	}
	p, err := ptyproc.Start(ptyproc.Spec{Argv: argv, Dir: cwd, Env: env, Unset: []string{"CLAUDECODE"}, Cols: 120, Rows: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	em := term.New(120, 40, term.WithScrollback(2000), term.WithReplies(procWriter{p}))
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	start, last, n := time.Now(), "", 0
	deadline := time.After(dur)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case b, ok := <-p.Output():
			if !ok {
				return
			}
			em.Write(b)
		case <-tick.C:
			if s := em.Text(); s != last {
				last, n = s, n+1
				name := fmt.Sprintf("%s-%03d-%05dms.txt", scen, n, time.Since(start).Milliseconds())
				os.WriteFile(filepath.Join(out, name), []byte(s), 0o644)
			}
		case <-deadline:
			return
		}
	}
}

type procWriter struct{ p *ptyproc.Proc }

func (w procWriter) Write(b []byte) (int, error) { return w.p.Write(b) }
