package signal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnvelopeMAC(t *testing.T) {
	key, _ := NewKey()
	other, _ := NewKey()
	e := Envelope{ID: "1-a", AgentID: "claude-t-1", TaskID: "t-1", Signal: Signal{Complete, "done"}}
	if e.Verify(key) {
		t.Fatal("unsigned envelope verified")
	}
	e.Sign(key)
	if !e.Verify(key) {
		t.Fatal("signed envelope does not verify")
	}
	if e.Verify(other) || e.Verify("") {
		t.Fatal("verified with another key")
	}
	// Every signed field is covered.
	for name, change := range map[string]func(*Envelope){
		"id":      func(e *Envelope) { e.ID = "2-a" },
		"agent":   func(e *Envelope) { e.AgentID = "codex-t-1" },
		"task":    func(e *Envelope) { e.TaskID = "t-2" },
		"type":    func(e *Envelope) { e.Signal.Type = Blocked },
		"payload": func(e *Envelope) { e.Signal.Payload = "done!" },
		// Moving bytes between fields must not keep the MAC valid.
		"boundary": func(e *Envelope) { e.AgentID, e.TaskID = "claude-t-1t", "-1" },
	} {
		c := e
		change(&c)
		if c.Verify(key) {
			t.Errorf("changing the %s kept the MAC valid", name)
		}
	}
}

func TestSendSignsAndKeyFiles(t *testing.T) {
	dir := t.TempDir()
	key, _ := NewKey()
	if err := PublishKey(dir, "claude-t-1", key); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(keyFile(dir, "claude-t-1", key))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	if strings.Contains(keyFile(dir, "claude-t-1", key), key) {
		t.Fatalf("key file %s names the key", keyFile(dir, "claude-t-1", key))
	}
	// Published again with a new key, the old one is void; the files are
	// links to one, so publishing creates none.
	again, _ := NewKey()
	if err := PublishKey(dir, "claude-t-1", again); err != nil {
		t.Fatal(err)
	}
	if err := CheckKey(dir, "claude-t-1", key); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "does not belong") {
		t.Fatalf("the replaced key: %v", err)
	}
	if err := PublishKey(dir, "claude-t-2", key); err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(keyFile(dir, "claude-t-1", again))
	b, _ := os.Stat(keyFile(dir, "claude-t-2", key))
	if !os.SameFile(a, b) {
		t.Fatal("two published keys are files of their own")
	}
	if err := RetireKey(dir, "claude-t-2"); err != nil {
		t.Fatal(err)
	}
	if err := CheckKey(dir, "claude-t-2", key); !errors.Is(err, errNoKeyFile) {
		t.Fatalf("a retired agent's key: %v", err)
	}
	if err := PublishKey(dir, "claude-t-1", key); err != nil {
		t.Fatal(err)
	}
	ch := serve(t, dir, nil)
	if err := Send(Sender{Dir: dir, AgentID: "claude-t-1", TaskID: "t-1", Key: key}, Signal{Type: Complete}); err != nil {
		t.Fatal(err)
	}
	e := (<-ch).env
	if !e.Verify(key) {
		t.Fatalf("delivered envelope does not verify: %+v", e)
	}
	if raw, _ := json.Marshal(e); strings.Contains(string(raw), key) {
		t.Fatalf("the envelope carries the key: %s", raw)
	}
	// Odd agent ids stay inside the keys folder.
	if got := keyFile(dir, "../../etc", key); filepath.Dir(got) != filepath.Join(dir, KeysDir) {
		t.Errorf("key file of an odd id: %s", got)
	}
	if err := RetireAllKeys(dir); err != nil {
		t.Fatal(err)
	}
	if err := CheckKey(dir, "claude-t-1", key); err == nil {
		t.Error("key accepted after RetireAllKeys")
	}
}
