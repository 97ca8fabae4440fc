package chorusdir

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Instance is this checkout's Chorus among the team working one task
// queue: its id names its claims (chorus/<id>/<agent>) and its heartbeat.
// Kept in .chorus/instance.json, git-ignored: a clone is another instance.
type Instance struct {
	ID      string    `json:"id"`
	Host    string    `json:"host"`
	Root    string    `json:"root"`
	Created time.Time `json:"created"`
}

// InstanceFile is where the instance's identity is kept.
func (d Dir) InstanceFile() string { return filepath.Join(d.Path, "instance.json") }

// Instance returns this checkout's identity, made on first use. A file
// made on another host or for another path (copied, or committed and
// cloned) is not this instance's: a new id replaces it.
func (d Dir) Instance() (Instance, error) {
	host, _ := os.Hostname()
	root, _ := filepath.Abs(d.Root)
	b, err := os.ReadFile(d.InstanceFile())
	if err == nil {
		var in Instance
		if json.Unmarshal(b, &in) == nil && ValidInstanceID(in.ID) && in.Host == host && in.Root == root {
			return in, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Instance{}, err
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return Instance{}, err
	}
	in := Instance{ID: hostPart(host) + "-" + hex.EncodeToString(r[:]), Host: host, Root: root, Created: time.Now().UTC()}
	b, _ = json.MarshalIndent(in, "", "  ")
	if err := WriteAtomic(d.InstanceFile(), append(b, '\n'), FileMode); err != nil {
		return Instance{}, fmt.Errorf("writing %s: %w", d.InstanceFile(), err)
	}
	return in, nil
}

// hostPart is the host name cut to a short, safe id prefix.
func hostPart(host string) string {
	host, _, _ = strings.Cut(strings.ToLower(host), ".")
	var b strings.Builder
	for _, c := range host {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' {
			b.WriteRune(c)
		}
		if b.Len() == 16 {
			break
		}
	}
	if s := strings.Trim(b.String(), "-"); s != "" {
		return s
	}
	return "chorus"
}

// ValidInstanceID: lower-case letters, digits and '-', 1 to 40 of them,
// so an id sits in a bd actor, a kv key and a path without quoting.
func ValidInstanceID(id string) bool {
	if id == "" || len(id) > 40 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}
