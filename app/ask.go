package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/orchestrator"
)

// newAskCmd is what an agent runs to ask a person a question and wait for
// the answer: it sends a NEEDS_HELP with the options to the running
// Chorus, then waits for its own answer file (written by the TUI or by
// `chorus answer` in any shell) and prints the answer.
func newAskCmd() *cobra.Command {
	var options []string
	c := &cobra.Command{
		Use:   "ask QUESTION [--option TEXT]...",
		Short: "From inside an agent: ask a person a question, wait, and print the answer",
		Long: `Sends QUESTION (with its options, if any) to the running Chorus, which
shows it to a person, and waits. The chosen option's text, or the person's
own answer, is printed on standard output.`,
		Example: `  choice=$(chorus ask "Which database?" --option PostgreSQL --option SQLite)`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// FromEnv checks the environment exactly as `chorus signal` does.
			from, _, err := signal.FromEnv([]string{string(signal.NeedsHelp)}, os.Getenv)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			s, err := signal.Ask(joinArgs(args), options)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			if err := signal.SendQuestion(from, s); err != nil {
				return withCode(ExitFailure, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "chorus: question sent for %s; waiting for the answer\n", from.TaskID)
			a, err := signal.WaitAnswer(cmd.Context(), from.Dir, s.ID)
			if err != nil {
				return withCode(ExitInterrupted, fmt.Errorf("no answer: %w", err))
			}
			fmt.Fprintln(cmd.OutOrStdout(), a.Text)
			return nil
		},
	}
	c.Flags().StringArrayVar(&options, "option", nil, "a choice to offer (repeatable); the person may still answer freely")
	return c
}

func joinArgs(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}

// pendingQuestion is a question an agent waits on, as `chorus status`
// lists it.
type pendingQuestion struct {
	Task     string   `json:"task"`
	Agent    string   `json:"agent"`
	Question string   `json:"question"`
	Options  []string `json:"options"`
	ID       string   `json:"id,omitempty"` // empty: answered by typing in the TUI
	Answer   string   `json:"answer"`       // the command that answers it
}

// pendingQuestions reads the questions waiting in state.json. Only a
// running Chorus has live agents: with none, there is nothing to answer.
func pendingQuestions(d chorusdir.Dir) ([]pendingQuestion, error) {
	if st, err := d.InspectLock(); err != nil || !st.Held {
		return nil, err
	}
	st, err := orchestrator.LoadState(d.State())
	if err != nil || st == nil {
		return nil, err
	}
	return questionsOf(st.Agents), nil
}

// questionsOf lists the questions agents wait on, by task.
func questionsOf(agents map[string]*orchestrator.AgentState) []pendingQuestion {
	var out []pendingQuestion
	for _, a := range agents {
		if a.Status != orchestrator.AgentNeedsHelp || a.Question == "" {
			continue
		}
		q := pendingQuestion{Task: a.TaskID, Agent: a.ID, Question: a.Question, Options: a.Options, ID: a.QuestionID}
		if q.Options == nil {
			q.Options = []string{}
		}
		if q.ID != "" {
			q.Answer = "chorus answer " + a.TaskID + " CHOICE"
		} else {
			q.Answer = "chorus answer " + a.TaskID + " TEXT (typed to the agent), or a on the agent in the TUI"
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	return out
}

// newAnswerCmd answers a `chorus ask` question from any shell.
func newAnswerCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "answer TASK CHOICE",
		Short: "Answer the question an agent asked with `chorus ask`: an option number or free text",
		Example: `  chorus answer bd-a1b2 2
  chorus answer bd-a1b2 "use SQLite, it is a demo"`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := g.loadProject(ctx, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			task := args[0]
			ec, err := cliEngine(ctx, p)
			if err != nil {
				return err
			}
			var qs []pendingQuestion
			if ec != nil {
				defer ec.Close()
				snap, err := ec.Current(ctx)
				if err != nil {
					return withCode(ExitFailure, err)
				}
				qs = questionsOf(snap.Agents)
			} else if qs, err = pendingQuestions(p.dir); err != nil {
				return withCode(ExitFailure, err)
			}
			for _, q := range qs {
				if q.Task != task {
					continue
				}
				if ec != nil {
					// The engine answers: a `chorus ask` question through its
					// answer file, a NEEDS_HELP by typing to the agent.
					text, shown := joinArgs(args[1:]), joinArgs(args[1:])
					if q.ID != "" {
						a, err := signal.ResolveChoice(q.Options, text)
						if err != nil {
							return withCode(ExitUsage, err)
						}
						shown = a.Text
					}
					if err := ec.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdAnswer, AgentID: q.Agent, Text: text}); err != nil {
						return withCode(ExitUsage, fmt.Errorf("answering %s: %w", task, err))
					}
					fmt.Fprintf(cmd.OutOrStdout(), "answered %s: %s\n", task, line(shown))
					return nil
				}
				if q.ID == "" {
					return withCode(ExitUsage, fmt.Errorf("%s asked with NEEDS_HELP, which is answered by typing to the agent: select it in the running Chorus and press a", task))
				}
				a, err := signal.ResolveChoice(q.Options, joinArgs(args[1:]))
				if err != nil {
					return withCode(ExitUsage, err)
				}
				if err := signal.WriteAnswer(p.dir.Path, q.ID, a); err != nil {
					return withCode(ExitFailure, fmt.Errorf("answering %s: %w", task, err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "answered %s: %s\n", task, line(a.Text))
				return nil
			}
			var waiting []string
			for _, q := range qs {
				waiting = append(waiting, q.Task)
			}
			if len(waiting) == 0 {
				return withCode(ExitUsage, errors.New("no agent is waiting for an answer (is Chorus running? `chorus status` lists pending questions)"))
			}
			return withCode(ExitUsage, fmt.Errorf("task %s has no pending question; waiting: %v", task, waiting))
		},
	}
}

// printQuestion lists a `chorus ask` question's options under its event
// line, with the command that answers it.
func printQuestion(w io.Writer, ev orchestrator.Event) {
	opts, _ := ev.Fields["options"].([]string)
	for i, o := range opts {
		fmt.Fprintf(w, "    %d) %s\n", i+1, line(o))
	}
	fmt.Fprintf(w, "    answer with: chorus answer %s %s\n", line(ev.Task), map[bool]string{true: "NUMBER|TEXT", false: "TEXT"}[len(opts) > 0])
}
