package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/patterns"
)

func newPatternsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "patterns [accept|dismiss ID]",
		Short: "Learnings several tasks found, suggested for .chorus/PATTERNS.md",
		Long: `A learning that two or more tasks wrote in their scratchpads (as it
landed in .agent/learnings.md on the target branch) is suggested as a
pattern every agent should know. Accepting one adds it to the "## Learned"
section of .chorus/PATTERNS.md, which every agent's prompt carries;
dismissing one stops it being suggested.`,
		Example: `  chorus patterns                  # list the suggestions
  chorus patterns accept 1083a564  # add one to PATTERNS.md
  chorus patterns dismiss 1083a564`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, found, err := suggestions(cmd, g)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(found) == 0 {
				fmt.Fprintf(out, "no pattern suggestions: none of the learnings on %s was found by %d tasks and is missing from %s\n", p.target, patterns.MinTasks, relPath(p.root, p.dir.Patterns()))
				return nil
			}
			for _, s := range found {
				fmt.Fprintf(out, "%s  %s\n          found by %s\n", s.ID, s.Text, strings.Join(s.Tasks, ", "))
			}
			fmt.Fprintln(out, "accept one with `chorus patterns accept ID`, or `chorus patterns dismiss ID`")
			return nil
		},
	}
	settle := func(use, short string, apply func(p *patternsProject, s patterns.Suggestion) (string, error)) *cobra.Command {
		return &cobra.Command{
			Use: use + " ID", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				p, found, err := suggestions(cmd, g)
				if err != nil {
					return err
				}
				for _, s := range found {
					if s.ID == args[0] {
						msg, err := apply(p, s)
						if err != nil {
							return withCode(ExitFailure, err)
						}
						fmt.Fprintln(cmd.OutOrStdout(), msg)
						return nil
					}
				}
				return withCode(ExitUsage, fmt.Errorf("no pattern suggestion %q: `chorus patterns` lists the ids", args[0]))
			},
		}
	}
	c.AddCommand(settle("accept", "Add a suggested pattern to .chorus/PATTERNS.md", func(p *patternsProject, s patterns.Suggestion) (string, error) {
		path := p.dir.Patterns()
		cur, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		if err := chorusdir.WriteAtomic(path, []byte(patterns.Accept(string(cur), s.Text)), 0o644); err != nil {
			return "", err
		}
		return fmt.Sprintf("added to %s under %q: %s (commit it to share it)", relPath(p.root, path), patterns.LearnedHeading, s.Text), nil
	}))
	c.AddCommand(settle("dismiss", "Stop suggesting a pattern", func(p *patternsProject, s patterns.Suggestion) (string, error) {
		if err := patterns.Dismiss(filepath.Join(p.dir.Path, patterns.DismissedFile), s.ID); err != nil {
			return "", err
		}
		return "dismissed: " + s.Text, nil
	}))
	return c
}

type patternsProject struct {
	root, target string
	dir          chorusdir.Dir
}

// suggestions reads the target branch's learnings against PATTERNS.md and
// the dismissed ids.
func suggestions(cmd *cobra.Command, g *globals) (*patternsProject, []patterns.Suggestion, error) {
	ctx := cmd.Context()
	p, err := g.loadProject(ctx, cmd.ErrOrStderr(), false)
	if err != nil {
		return nil, nil, err
	}
	target := p.cfg.Merge.TargetBranch
	if target == "" {
		target = "HEAD"
	}
	pp := &patternsProject{root: p.root, target: target, dir: p.dir}
	text, err := gitx.Git(ctx, p.root, "show", target+":.agent/learnings.md")
	if err != nil {
		return pp, nil, nil // no learnings committed on the target yet
	}
	pm, _ := os.ReadFile(p.dir.Patterns())
	return pp, patterns.Suggest(text, string(pm), patterns.ReadDismissed(filepath.Join(p.dir.Path, patterns.DismissedFile))), nil
}

func relPath(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
