package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-dev/chorus/agent/signal"
)

// Questions asked with `chorus ask`: the asking process sends a NEEDS_HELP
// carrying a question id and options, then waits for its own answer file
// (.chorus/answers/<id>.json). The engine records the question on the
// agent (needs-help, as a typed NEEDS_HELP) without stopping the turn, and
// clears it when the answer file appears, whoever wrote it: the engine for
// an answer from a front end (CmdAnswer) or `chorus answer` in a shell.

// EvAnswered: a question asked with `chorus ask` was answered; Text is the
// answer.
const EvAnswered EventKind = "question_answered"

// recordQuestion records a question from `chorus ask` on its agent.
// Loop only.
func (e *Engine) recordQuestion(r *agentRun, text, id string, options []string) error {
	if err := signal.CheckQuestionID(id); err != nil {
		return err
	}
	a := e.st.Agents[r.id]
	if a == nil {
		return fmt.Errorf("%w: %s", ErrUnknownAgent, r.id)
	}
	a.Status, a.Question, a.Options, a.QuestionID = AgentNeedsHelp, text, options, id
	e.emit(Event{Kind: EvNeedsHelp, Agent: r.id, Task: r.taskID, Text: text,
		Fields: map[string]any{"options": options, "question": id}})
	// An answer that came before the question was recorded (the answers
	// folder is watched from the start) clears it at once.
	if _, ok, _ := signal.ReadAnswer(e.opt.Dir.Path, id); ok {
		e.answered(id)
	}
	return nil
}

// dropQuestion forgets a pending `chorus ask` question: its process is
// gone with the agent, so nobody waits for the answer any more.
func (r *agentRun) dropQuestion() {
	r.update(func(st *State, a *AgentState) {
		if a != nil && a.QuestionID != "" {
			a.Status, a.Question, a.Options, a.QuestionID = AgentRunning, "", nil, ""
		}
	})
}

// answerAsked answers a front end's CmdAnswer when the agent asked with
// `chorus ask`, by writing the answer file; done=false leaves the command
// to the typed-answer path.
func (e *Engine) answerAsked(ctx context.Context, c Command) (done bool, err error) {
	var qid string
	var options []string
	if err := e.do(ctx, func() {
		if a := e.st.Agents[c.AgentID]; a != nil && a.Status == AgentNeedsHelp {
			qid, options = a.QuestionID, a.Options
		}
	}); err != nil {
		return true, err
	}
	if qid == "" {
		return false, nil
	}
	ans, err := signal.ResolveChoice(options, c.Text)
	if err != nil {
		return true, err
	}
	return true, signal.WriteAnswer(e.opt.Dir.Path, qid, ans)
}

// watchAnswers clears questions as their answer files appear. Answers
// left by an earlier session are removed first: their askers died with it.
func (e *Engine) watchAnswers(ctx context.Context) {
	dir := filepath.Join(e.opt.Dir.Path, signal.AnswersDir)
	if entries, err := os.ReadDir(dir); err == nil {
		for _, en := range entries {
			_ = os.Remove(filepath.Join(dir, en.Name()))
		}
	}
	ch, err := signal.WatchAnswers(ctx, e.opt.Dir.Path)
	if err != nil {
		e.post(func() { e.emit(Event{Kind: EvError, Text: "watching answers: " + err.Error()}) })
		return
	}
	go func() {
		for id := range ch {
			select {
			case e.msgs <- func() { e.answered(id) }:
			case <-e.loopDone:
				return
			}
		}
	}()
}

// answered clears the question id names, if an agent still waits on it.
// Loop only.
func (e *Engine) answered(id string) {
	for _, a := range e.st.Agents {
		if a.QuestionID != id || a.Status != AgentNeedsHelp {
			continue
		}
		text := ""
		if ans, ok, _ := signal.ReadAnswer(e.opt.Dir.Path, id); ok {
			text = ans.Text
			// An agent far from the hub waits for its answer in its
			// host's files: the answer goes there over the stream.
			if r := e.runs[a.ID]; r != nil {
				if hp, ok := r.proc.Load().(*hostedProc); ok && hp.follow != nil {
					cl := hp.cur()
					go func() { _ = cl.SendAnswer(id, ans) }()
				}
			}
		}
		a.Status, a.Question, a.Options, a.QuestionID = AgentRunning, "", nil, ""
		e.emit(Event{Kind: EvAnswered, Agent: a.ID, Task: a.TaskID, Text: text})
		return
	}
	e.dirty = false
}
