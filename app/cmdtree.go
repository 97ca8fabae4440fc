package app

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A short command builds one subcommand, not the whole tree: building
// every subcommand and its flags was a tenth of `chorus --version`'s CPU,
// paid again by each `chorus status`.

// subcommand is one subcommand of the root, built on demand.
type subcommand struct {
	name string // what cobra finds it by (its Use's first word; none has aliases)
	make func() *cobra.Command
}

// addSubcommands adds to root the subcommand args name, none when they
// name none (and ask for no help), and every one otherwise: help, the
// completion and help commands, an unknown name (for cobra's
// suggestions), a flag the root does not know.
func addSubcommands(root *cobra.Command, subs []subcommand, args []string) {
	name, ok := commandName(args, root.PersistentFlags(), root.Flags())
	if ok && name == "" {
		return
	}
	for _, s := range subs {
		if ok && s.name == name {
			root.AddCommand(s.make())
			return
		}
	}
	for _, s := range subs {
		root.AddCommand(s.make())
	}
}

// commandName is the subcommand args name, as cobra finds it: the first
// argument that is no flag of the root's nor a flag's value. "" and true:
// they name none. false: the whole tree is needed (a help flag before
// any name, "--", a flag the root does not define).
func commandName(args []string, flagSets ...*pflag.FlagSet) (string, bool) {
	lookup := func(long, short string) *pflag.Flag {
		for _, fs := range flagSets {
			if long != "" {
				if f := fs.Lookup(long); f != nil {
					return f
				}
			} else if f := fs.ShorthandLookup(short); f != nil {
				return f
			}
		}
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var f *pflag.Flag
		inline := false // the value is in a itself
		switch {
		case a == "--" || a == "-":
			return "", false
		case strings.HasPrefix(a, "--"):
			long, _, eq := strings.Cut(a[2:], "=")
			switch long {
			case "help":
				return "", false
			case "version":
				continue // cobra's own, a bool
			}
			f, inline = lookup(long, ""), eq
		case strings.HasPrefix(a, "-"):
			short := a[1:2]
			switch short {
			case "h":
				return "", false
			case "v":
				if len(a) == 2 && lookup("", "v") == nil {
					continue // cobra's --version shorthand
				}
			}
			f = lookup("", short)
			inline = len(a) > 2
			if f != nil && f.NoOptDefVal != "" && inline {
				return "", false // grouped short flags: leave them to cobra
			}
		default:
			return a, true
		}
		if f == nil {
			return "", false
		}
		if f.NoOptDefVal == "" && !inline {
			i++ // the flag's value
		}
	}
	return "", true
}
