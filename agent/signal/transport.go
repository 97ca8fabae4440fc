package signal

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Environment variables an agent process sees.
const (
	EnvDir     = "CHORUS_DIR" // the .chorus directory of the running Chorus
	EnvAgentID = "CHORUS_AGENT_ID"
	EnvTaskID  = "CHORUS_TASK_ID"
	EnvExe     = "CHORUS_EXE" // the chorus executable, for chorus-signal to hand other commands to
)

// Envelope is a signal with its sender.
type Envelope struct {
	ID      string    `json:"id"`
	AgentID string    `json:"agent_id"`
	TaskID  string    `json:"task_id"`
	Signal  Signal    `json:"signal"`
	Time    time.Time `json:"time"`
	PID     int       `json:"pid,omitempty"` // the sending command's pid
	Dir     string    `json:"dir,omitempty"` // its working directory
	// MAC authenticates ID, AgentID, TaskID and Signal with the agent's
	// key (see Sign).
	MAC string `json:"mac,omitempty"`
	// Question comes with the NEEDS_HELP of `chorus ask` (SendQuestion).
	Question *Question `json:"question,omitempty"`
}

// Sender is who a signal is from: the running Chorus's directory, the
// agent and its task, and the agent's key (an empty key sends unsigned).
type Sender struct {
	Dir, AgentID, TaskID, Key string
	// Hosted: the agent runs in an agent host and outlives its engine, so
	// a signal waits for an engine that is down (EnvHosted).
	Hosted bool
}

// EnvHosted is set ("1") for agents that run in an agent host.
const EnvHosted = "CHORUS_AGENT_HOSTED"

// FromEnv reads what `chorus signal TYPE [payload]` needs from its
// arguments and environment, so that the command is a thin wrapper around
// it and Send. Accepted forms: `COMPLETE`, `BLOCKED: no key`,
// `BLOCKED no key`, `BLOCKED: no key` split over several arguments. The
// agent's key is checked against the one the engine published: an error
// wrapping ErrBadKey means the signal would be rejected.
func FromEnv(args []string, env func(string) string) (Sender, Signal, error) {
	from := Sender{Dir: env(EnvDir), AgentID: env(EnvAgentID), TaskID: env(EnvTaskID), Key: env(EnvKey), Hosted: env(EnvHosted) == "1"}
	if from.Dir == "" {
		return Sender{}, Signal{}, errors.New("not running under Chorus: " + EnvDir + " is not set")
	}
	if !filepath.IsAbs(from.Dir) {
		// Agents run in their worktrees: a relative path would point there.
		return Sender{}, Signal{}, fmt.Errorf("%s must be an absolute path, got %q", EnvDir, from.Dir)
	}
	if from.AgentID == "" {
		return Sender{}, Signal{}, errors.New("not running as a Chorus agent: " + EnvAgentID + " is not set")
	}
	if from.TaskID == "" {
		return Sender{}, Signal{}, errors.New("not running as a Chorus agent: " + EnvTaskID + " is not set")
	}
	if len(args) == 0 || strings.TrimSpace(strings.Join(args, "")) == "" {
		return Sender{}, Signal{}, fmt.Errorf("usage: chorus signal TYPE [payload], TYPE one of %s", typeList())
	}
	text := args[0]
	if len(args) > 1 {
		if strings.Contains(args[0], ":") {
			text = strings.Join(args, " ")
		} else {
			text = args[0] + ": " + strings.Join(args[1:], " ")
		}
	}
	s, err := Parse(text)
	if errors.Is(err, ErrUnknownType) {
		return Sender{}, Signal{}, fmt.Errorf("%w; known types: %s", err, typeList())
	}
	if err != nil {
		return Sender{}, Signal{}, err
	}
	if st, err := os.Stat(from.Dir); err != nil || !st.IsDir() {
		return Sender{}, Signal{}, fmt.Errorf("%s=%s: no such Chorus directory", EnvDir, from.Dir)
	}
	if err := CheckKey(from.Dir, from.AgentID, from.Key); err != nil {
		// A restarting engine publishes a hosted agent's key again once it
		// re-adopts it; until then the key cannot be checked here (the
		// engine still checks the signature).
		if !from.Hosted || !errors.Is(err, errNoKeyFile) {
			return Sender{}, Signal{}, err
		}
	}
	return from, s, nil
}

func typeList() string {
	s := make([]string, len(Types))
	for i, t := range Types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// newID is sortable by time and unique across processes.
func newID() (string, error) {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%020d-%s", time.Now().UnixNano(), hex.EncodeToString(r[:])), nil
}

// maxEnvelope bounds an envelope (and any file Chorus reads that an agent
// could have put in its place): an envelope is a few hundred bytes, a
// question with its options a few KiB.
const maxEnvelope = 256 << 10

// readRegular reads a small file that agents can reach, refusing anything
// but a regular file of at most maxEnvelope bytes: a FIFO (a plain read
// would block the reader for good), a link to /dev/zero (it would grow
// the reader without bound), a directory… The file is opened without
// following links and without blocking, and checked on its descriptor
// before a capped read.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) {
			return nil, errors.New("a symbolic link, not a regular file: refused")
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s): refused", st.Mode().Type())
	}
	if st.Size() > maxEnvelope {
		return nil, fmt.Errorf("%d bytes, more than the %d allowed: refused", st.Size(), maxEnvelope)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEnvelope+1))
	if err == nil && len(b) > maxEnvelope {
		err = fmt.Errorf("more than the %d bytes allowed: refused", maxEnvelope)
	}
	return b, err
}
