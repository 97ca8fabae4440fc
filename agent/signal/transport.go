package signal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Environment variables an agent process sees.
const (
	EnvDir     = "CHORUS_DIR" // the .chorus directory of the running Chorus
	EnvAgentID = "CHORUS_AGENT_ID"
	EnvTaskID  = "CHORUS_TASK_ID"
)

// SignalsDir is the folder inside the .chorus directory that carries
// signals from `chorus signal` to the engine, one file per signal.
const SignalsDir = "signals"

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

	// Err is set by Watch for a file it could not read; Ack discards it.
	Err  error  `json:"-"`
	path string // the file, for Ack
}

// Ack deletes the envelope's file. Call it once the signal's effect is
// recorded (state.json written): a signal not acknowledged is delivered
// again by the next Watch, e.g. after a crash. A repeat can be recognised
// by its ID.
func (e Envelope) Ack() error {
	if e.path == "" {
		return nil
	}
	err := os.Remove(e.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Sender is who a signal is from: the running Chorus's directory, the
// agent and its task, and the agent's key (an empty key sends unsigned).
type Sender struct {
	Dir, AgentID, TaskID, Key string
}

// FromEnv reads what `chorus signal TYPE [payload]` needs from its
// arguments and environment, so that the command is a thin wrapper around
// it and Send. Accepted forms: `COMPLETE`, `BLOCKED: no key`,
// `BLOCKED no key`, `BLOCKED: no key` split over several arguments. The
// agent's key is checked against the one the engine published: an error
// wrapping ErrBadKey means the signal would be rejected.
func FromEnv(args []string, env func(string) string) (Sender, Signal, error) {
	from := Sender{Dir: env(EnvDir), AgentID: env(EnvAgentID), TaskID: env(EnvTaskID), Key: env(EnvKey)}
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
		return Sender{}, Signal{}, err
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

// Send delivers a signal from an agent to the Chorus whose .chorus
// directory is from.Dir, signed with from.Key. The signal is written to a temporary file that is then renamed
// into signals/, so the engine sees a whole file or nothing; each signal is
// its own file, so concurrent senders never interfere. If Chorus is not
// running, the signal waits for the next Watch.
func Send(from Sender, s Signal) error {
	return send(from, Envelope{Signal: s})
}

// SendQuestion delivers the NEEDS_HELP of `chorus ask`: q's text is the
// payload, its id and options travel beside it (under the same MAC).
func SendQuestion(from Sender, q Question) error {
	return send(from, Envelope{Signal: Signal{Type: NeedsHelp, Payload: q.Text}, Question: &q})
}

func send(from Sender, e Envelope) error {
	chorusDir := from.Dir
	if chorusDir == "" {
		return errors.New("signal: no Chorus directory")
	}
	if st, err := os.Stat(chorusDir); err != nil || !st.IsDir() {
		return fmt.Errorf("signal: Chorus directory %s not found", chorusDir)
	}
	dir := filepath.Join(chorusDir, SignalsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	id, err := newID()
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	e.ID, e.AgentID, e.TaskID, e.Time, e.PID, e.Dir = id, from.AgentID, from.TaskID, time.Now().UTC(), os.Getpid(), cwd
	if from.Key != "" {
		e.Sign(from.Key)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".tmp-"+id)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, id+".json"))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("signal: write: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename durable; best effort
		d.Close()
	}
	return nil
}

// newID is sortable by time (names are delivered in order at startup) and
// unique across processes.
func newID() (string, error) {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%020d-%s", time.Now().UnixNano(), hex.EncodeToString(r[:])), nil
}

// Watch delivers the signals sent to chorusDir: first those already
// waiting (oldest first), then each new one as it arrives, woken by
// inotify rather than polling. Each file is delivered once per Watch; see
// Envelope.Ack. The channel is closed when ctx ends.
func Watch(ctx context.Context, chorusDir string) (<-chan Envelope, error) {
	dir := filepath.Join(chorusDir, SignalsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	// Watch before the first scan, so that nothing arriving in between is
	// missed; the delivered set absorbs the overlap.
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
	}
	out := make(chan Envelope)
	go func() {
		defer close(out)
		defer w.Close()
		delivered := map[string]bool{}
		deliver := func(name string) bool {
			if delivered[name] || !isSignalFile(name) {
				return true
			}
			e, ok := readEnvelope(filepath.Join(dir, name))
			if !ok {
				return true // gone already
			}
			delivered[name] = true
			select {
			case out <- e:
				return true
			case <-ctx.Done():
				return false
			}
		}
		scan := func() bool {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return true
			}
			names := make([]string, 0, len(entries))
			present := map[string]bool{}
			for _, en := range entries {
				names = append(names, en.Name())
				present[en.Name()] = true
			}
			for n := range delivered {
				if !present[n] {
					delete(delivered, n)
				}
			}
			sort.Strings(names)
			for _, n := range names {
				if !deliver(n) {
					return false
				}
			}
			return true
		}
		if !scan() {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				name := filepath.Base(ev.Name)
				switch {
				case ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write):
					if !deliver(name) {
						return
					}
				case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
					delete(delivered, name)
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				// Most likely the kernel queue overflowed: events were lost,
				// the directory itself was not.
				if !scan() {
					return
				}
			}
		}
	}()
	return out, nil
}

func isSignalFile(name string) bool {
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".json")
}

// maxEnvelope bounds a signal file: an envelope is a few hundred bytes,
// a question with its options a few KiB.
const maxEnvelope = 256 << 10

// readSignalFile reads a signal file, refusing anything but a regular file
// of at most maxEnvelope bytes. Anyone who can write to the folder can put
// there a FIFO (a plain read would block the watcher for good), a link to
// /dev/zero (it would grow the engine without bound), a directory…: the
// file is opened without following links and without blocking, and
// checked on its descriptor before a capped read.
func readSignalFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) {
			return nil, errors.New("a symbolic link, not a signal file: refused")
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
		return nil, fmt.Errorf("%d bytes, more than a signal's %d: refused", st.Size(), maxEnvelope)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEnvelope+1))
	if err == nil && len(b) > maxEnvelope {
		err = fmt.Errorf("more than a signal's %d bytes: refused", maxEnvelope)
	}
	return b, err
}

func readEnvelope(path string) (Envelope, bool) {
	b, err := readSignalFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Envelope{}, false
	}
	e := Envelope{path: path}
	if err == nil {
		err = json.Unmarshal(b, &e)
		e.path = path
	}
	if err == nil && e.Signal.Type == "" {
		err = errors.New("no signal type")
	}
	if err != nil {
		e.Err = fmt.Errorf("signal file %s: %w", filepath.Base(path), err)
	}
	return e, true
}
