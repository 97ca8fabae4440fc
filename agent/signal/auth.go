package signal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Keys. Every agent run gets its own random key in its environment
// (EnvKey). `chorus signal` signs its envelope with it (an HMAC, never the
// key itself) and checks it against the hash the engine publishes
// (PublishKey), so that it can tell at once that its key is wrong,
// missing or stale, or that it names another agent, rather than send a
// signal the engine will refuse.
//
// The key is not what the engine trusts: any process of the user can read
// another's environment from /proc. The engine takes a signal only from a
// process of the agent's own tree or session (see SocketPath, and the
// engine's Deliver).

// EnvKey holds an agent run's signing key.
const EnvKey = "CHORUS_SIGNAL_KEY"

// KeysDir is the folder inside the .chorus directory that holds the
// published key hashes, one owner-only file per running agent.
const KeysDir = "signal-keys"

// ErrBadKey is wrapped by the error of a signal whose key does not belong
// to the agent it names.
var ErrBadKey = errors.New("signal key rejected")

// NewKey returns a fresh random key (hex).
func NewKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// keyHash is what is published of a key: enough to check one, useless to
// sign with.
func keyHash(key string) string {
	h := sha256.Sum256([]byte("chorus signal key\x00" + key))
	return hex.EncodeToString(h[:])
}

// keyName is the part of an agent's key file names that names the
// agent. Agent ids are made of safe characters; anything else is hashed
// so it cannot leave the folder.
func keyName(agentID string) string {
	if !safeName(agentID) {
		h := sha256.Sum256([]byte(agentID))
		return "x-" + hex.EncodeToString(h[:16])
	}
	return agentID
}

// keyFile is where the hash of agentID's key is published: in the file's
// name (agent, dot, hash), not in its contents. Each published name is a
// hard link to one empty file (keyAnchor), so publishing creates no
// inode: a file creation costs up to a millisecond of kernel time on ext4
// under churn, a link a hundredth of that, and every agent start
// publishes a key.
func keyFile(chorusDir, agentID, key string) string {
	return filepath.Join(chorusDir, KeysDir, keyName(agentID)+"."+keyHash(key))
}

// keyAnchor is the file every published key name links to.
const keyAnchor = ".published"

// publishedKeys lists the names published for agentID (any key).
func publishedKeys(chorusDir, agentID string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(chorusDir, KeysDir))
	if err != nil {
		return nil, err
	}
	prefix := keyName(agentID) + "."
	var out []string
	for _, e := range ents {
		if n := e.Name(); len(n) == len(prefix)+sha256.Size*2 && strings.HasPrefix(n, prefix) && isHex(n[len(prefix):]) {
			out = append(out, n)
		}
	}
	return out, nil
}

func isHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

func safeName(s string) bool {
	if s == "" || len(s) > 200 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// PublishKey records the hash of agentID's key, readable by the owner
// only; a key published for agentID before is void from then on.
func PublishKey(chorusDir, agentID, key string) error {
	dir := filepath.Join(chorusDir, KeysDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	anchor := filepath.Join(dir, keyAnchor)
	if err := os.Link(anchor, keyFile(chorusDir, agentID, key)); err == nil || errors.Is(err, fs.ErrExist) {
		// Published (again): any other key of the agent goes.
		return retireKeys(chorusDir, agentID, key)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The first key of this folder: its anchor first.
	f, err := os.OpenFile(anchor, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	if err := os.Link(anchor, keyFile(chorusDir, agentID, key)); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return retireKeys(chorusDir, agentID, key)
}

// RetireKey removes agentID's published key hash: its signals are no
// longer wanted.
func RetireKey(chorusDir, agentID string) error { return retireKeys(chorusDir, agentID, "") }

// retireKeys removes the names published for agentID but keep's.
func retireKeys(chorusDir, agentID, keep string) error {
	names, err := publishedKeys(chorusDir, agentID)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		p := filepath.Join(chorusDir, KeysDir, n)
		if keep != "" && p == keyFile(chorusDir, agentID, keep) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// RetireAllKeys removes every published key hash: a new engine gives its
// agents new keys, so those of an earlier session are void.
func RetireAllKeys(chorusDir string) error {
	err := os.RemoveAll(filepath.Join(chorusDir, KeysDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// errNoKeyFile marks CheckKey's error for a key not published (it prints
// as nothing).
var errNoKeyFile = noKeyFile{}

type noKeyFile struct{}

func (noKeyFile) Error() string { return "" }

// CheckKey reports whether key is the one published for agentID; the
// error (wrapping ErrBadKey) says what is wrong and what to do.
func CheckKey(chorusDir, agentID, key string) error {
	if key == "" {
		return fmt.Errorf("%w: %s is not set; only the agent Chorus started can signal for its task (run this from the agent's own shell)", ErrBadKey, EnvKey)
	}
	st, err := os.Lstat(keyFile(chorusDir, agentID, key))
	if err == nil && st.Mode().IsRegular() {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: reading the key of agent %s: %v", ErrBadKey, agentID, err)
	}
	names, err := publishedKeys(chorusDir, agentID)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: reading the key of agent %s: %v", ErrBadKey, agentID, err)
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: agent %s is not running in this Chorus session (it finished, or Chorus restarted and gave it a new key); nothing was sent%w", ErrBadKey, agentID, errNoKeyFile)
	}
	return fmt.Errorf("%w: %s does not belong to agent %s; an agent can only signal for itself (check %s and %s)", ErrBadKey, EnvKey, agentID, EnvAgentID, EnvTaskID)
}

// mac is the HMAC-SHA256 of the envelope's identity and signal, each field
// length-prefixed so no two envelopes share an input.
func (e Envelope) mac(key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("chorus-signal-v1"))
	fields := []string{e.ID, e.AgentID, e.TaskID, string(e.Signal.Type), e.Signal.Payload}
	if q := e.Question; q != nil {
		// A question's id and options are part of what was signed.
		fields = append(append(fields, "question", q.ID, q.Text), q.Options...)
	}
	for _, f := range fields {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// Sign sets the envelope's MAC with key.
func (e *Envelope) Sign(key string) { e.MAC = e.mac(key) }

// Verify reports whether the envelope was signed with key; an unsigned
// envelope or an empty key never verifies.
func (e Envelope) Verify(key string) bool {
	if key == "" || e.MAC == "" {
		return false
	}
	return hmac.Equal([]byte(e.MAC), []byte(e.mac(key)))
}
