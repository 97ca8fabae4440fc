package signal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// AnswersDir is the folder inside the .chorus directory where the answer
// to a `chorus ask` question appears, as <question id>.json. The asking
// process watches for its own file, so an answer reaches it whoever
// writes it: the running Chorus (the TUI) or `chorus answer` in any shell.
const AnswersDir = "answers"

// Answer is the content of an answer file.
type Answer struct {
	Question string `json:"question"`
	Text     string `json:"text"`
	Choice   int    `json:"choice,omitempty"` // 1-based option number; 0 for a free answer
}

var questionIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{20}-[0-9a-f]{12}$`) })

// NewQuestionID returns a fresh question id.
func NewQuestionID() (string, error) { return newID() }

// CheckQuestionID refuses ids that are not ours: they name a file.
func CheckQuestionID(id string) error {
	if !questionIDRe().MatchString(id) {
		return fmt.Errorf("invalid question id %q", id)
	}
	return nil
}

// AnswerPath is where the answer to question id is written.
func AnswerPath(chorusDir, id string) string {
	return filepath.Join(chorusDir, AnswersDir, id+".json")
}

// ResolveChoice turns what a person typed into an answer: a number picks
// that option (1-based), anything else is a free answer.
func ResolveChoice(options []string, choice string) (Answer, error) {
	choice = strings.TrimSpace(choice)
	if choice == "" {
		return Answer{}, errors.New("the answer is empty; give an option number or some text")
	}
	if n, err := strconv.Atoi(choice); err == nil && len(options) > 0 {
		if n < 1 || n > len(options) {
			return Answer{}, fmt.Errorf("option %d does not exist; choose 1 to %d or write a free answer", n, len(options))
		}
		return Answer{Text: options[n-1], Choice: n}, nil
	}
	return Answer{Text: choice}, nil
}

// WriteAnswer delivers an answer to question id. It is written to a
// temporary file and renamed, so a watcher sees all of it or nothing; the
// first answer wins (a later one for the same question is refused).
func WriteAnswer(chorusDir, id string, a Answer) error {
	if err := CheckQuestionID(id); err != nil {
		return err
	}
	dir := filepath.Join(chorusDir, AnswersDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	a.Question = id
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+id+"-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Link, not rename: it fails when an answer is already there.
		err = os.Link(tmp.Name(), AnswerPath(chorusDir, id))
		if errors.Is(err, fs.ErrExist) {
			err = errors.New("this question is already answered")
		}
	}
	os.Remove(tmp.Name())
	return err
}

// ReadAnswer reads question id's answer; ok is false while there is none.
func ReadAnswer(chorusDir, id string) (a Answer, ok bool, err error) {
	// Agents can write to the answers folder: a FIFO or a link there must
	// not block or flood whoever reads it.
	b, err := readRegular(AnswerPath(chorusDir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return Answer{}, false, nil
	}
	if err != nil {
		return Answer{}, false, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return Answer{}, false, fmt.Errorf("answer file %s: %w", AnswerPath(chorusDir, id), err)
	}
	return a, true, nil
}

// WatchAnswers reports the id of every answer file that appears in
// chorusDir's answers folder (and of those already there), woken by
// fsnotify. The channel closes when ctx ends.
func WatchAnswers(ctx context.Context, chorusDir string) (<-chan string, error) {
	dir := filepath.Join(chorusDir, AnswersDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
	}
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer w.Close()
		send := func(name string) bool {
			id, ok := strings.CutSuffix(name, ".json")
			if !ok || CheckQuestionID(id) != nil {
				return true
			}
			select {
			case out <- id:
				return true
			case <-ctx.Done():
				return false
			}
		}
		scan := func() bool {
			entries, _ := os.ReadDir(dir)
			for _, en := range entries {
				if !send(en.Name()) {
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
				if ev.Has(fsnotify.Create) && !send(filepath.Base(ev.Name)) {
					return
				}
			case _, ok := <-w.Errors:
				if !ok || !scan() {
					return
				}
			}
		}
	}()
	return out, nil
}

// WaitAnswer blocks until question id is answered (or ctx ends) and
// returns the answer.
func WaitAnswer(ctx context.Context, chorusDir, id string) (Answer, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := WatchAnswers(ctx, chorusDir)
	if err != nil {
		return Answer{}, err
	}
	for got := range ch {
		if got != id {
			continue
		}
		a, ok, err := ReadAnswer(chorusDir, id)
		if err != nil {
			return Answer{}, err
		}
		if ok {
			return a, nil
		}
	}
	return Answer{}, ctx.Err()
}

// maxOptions bounds the choices of one question (they are listed on screen).
const maxOptions = 20

// Question is what `chorus ask` sends beside its NEEDS_HELP.
type Question struct {
	ID      string   `json:"id"` // names the answer file
	Text    string   `json:"text"`
	Options []string `json:"options,omitempty"`
}

// Ask builds a question with a fresh id; the text and options are cleaned
// like payloads, since they end up on screen.
func Ask(question string, options []string) (Question, error) {
	q := Question{Text: cleanPayload(question)}
	if q.Text == "" {
		return Question{}, errors.New("the question is empty")
	}
	if len(options) > maxOptions {
		return Question{}, fmt.Errorf("%d options is too many; give at most %d", len(options), maxOptions)
	}
	for i, o := range options {
		c := cleanPayload(o)
		if c == "" {
			return Question{}, fmt.Errorf("option %d is empty", i+1)
		}
		q.Options = append(q.Options, c)
	}
	id, err := NewQuestionID()
	if err != nil {
		return Question{}, err
	}
	q.ID = id
	return q, nil
}
