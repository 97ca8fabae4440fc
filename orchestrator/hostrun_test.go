package orchestrator

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/config"
)

// An agent host left by a chorus speaking another protocol version is
// named at start, with both versions, and asked to stop (which any
// version understands); nothing else is said to it.
func TestHostOfAnotherVersionIsReportedAndStopped(t *testing.T) {
	h := newHarness(t, "signal COMPLETE\n", func(c *config.Config) { c.Agents.Host = true })
	in, err := h.dir.Instance()
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "chv")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "old.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	roles := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// The hello frame: type 'H', a 4-byte length, JSON.
			var hdr [5]byte
			if _, err := io.ReadFull(c, hdr[:]); err == nil && hdr[0] == 'H' {
				b := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
				_, _ = io.ReadFull(c, b)
				var hello struct{ Role string }
				_ = json.Unmarshal(b, &hello)
				roles <- hello.Role
				out, _ := json.Marshal(map[string]any{"version": host.Version + 1, "role": "host"})
				binary.BigEndian.PutUint32(hdr[1:], uint32(len(out)))
				_, _ = c.Write(append(hdr[:], out...))
			}
			c.Close()
		}
	}()
	hosts := filepath.Join(h.dir.Path, "hosts")
	if err := os.MkdirAll(hosts, 0o700); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(host.Meta{Instance: in.ID, AgentID: "script-t-old", TaskID: "t-old", Socket: sock, HostPID: os.Getpid(), Version: host.Version + 1})
	if err := os.WriteFile(filepath.Join(hosts, "old.json"), meta, 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()
	ev := h.waitFor(func(e Event) bool { return e.Kind == EvAlert && strings.Contains(e.Text, "script-t-old") })
	if !strings.Contains(ev.Text, "protocol version") || !strings.Contains(ev.Text, "stopping it") {
		t.Fatalf("alert %q does not say what is wrong and what was done", ev.Text)
	}
	got := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for !got["stop"] {
		select {
		case r := <-roles:
			got[r] = true
		case <-deadline:
			t.Fatalf("the host was not asked to stop; it was asked %v", got)
		}
	}
}
