package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

// A team: several Chorus instances (clones, machines) on one task queue,
// bd on a shared Dolt server, meeting on one git remote (merge.remote).

// beadsServer reads a server-mode .beads/metadata.json: where the shared
// Dolt server is, "" when the queue is not on a server.
func beadsServer(root string) string {
	dir, err := beads.MainBeadsDir(root)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if err != nil {
		return ""
	}
	var m struct {
		Mode     string `json:"dolt_mode"`
		Host     string `json:"dolt_server_host"`
		Port     int    `json:"dolt_server_port"`
		Database string `json:"dolt_database"`
	}
	if json.Unmarshal(b, &m) != nil || m.Mode != "server" {
		return ""
	}
	where := m.Host
	if where == "" {
		where = "127.0.0.1"
	}
	if m.Port != 0 {
		where += fmt.Sprintf(":%d", m.Port)
	}
	if m.Database != "" {
		where += ", database " + m.Database
	}
	return where
}

// teamRemote is the remote a team meets on: origin, or the only remote.
func teamRemote(ctx context.Context, root string) string {
	out, err := gitx.Git(ctx, root, "remote")
	if err != nil {
		return ""
	}
	names := strings.Fields(out)
	for _, n := range names {
		if n == "origin" {
			return n
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return ""
}

// teamChecks says what init found for working as a team and sets
// merge.remote when the task queue is on a server and there is a remote.
func teamChecks(ctx context.Context, root string, cfg *config.Config) []check {
	server, remote := beadsServer(root), teamRemote(ctx, root)
	switch {
	case server != "" && remote != "":
		cfg.Merge.Remote = remote
		return []check{
			{Name: "task queue", OK: true, Detail: "bd on a shared Dolt server (" + server + "): every clone set up like this one works the same queue, each Chorus claiming under its own instance id"},
			{Name: "team remote", OK: true, Detail: remote + " (merge.remote): finished work is checked on " + remote + "'s " + orTarget(cfg.Merge.TargetBranch) + " and lands by a push that holds only if nobody landed first"},
		}
	case server != "":
		return []check{{Name: "task queue", OK: true, Detail: "bd on a shared Dolt server (" + server + "), but no git remote: work lands only in this clone (add a remote and set merge.remote to land where the team meets)"}}
	case remote != "":
		return []check{{Name: "team", OK: true, Detail: "remote " + remote + " found; to share the work with other clones, put the tasks on a server (bd init --server) and set merge.remote"}}
	}
	return nil
}

func orTarget(s string) string {
	if s == "" {
		return "target branch"
	}
	return s
}

// errBuiltinTeam: a team needs one queue every instance reaches.
var errBuiltinTeam = errors.New("one task queue for several Chorus instances needs a server")

// teamStoreCheck refuses a team run (merge.remote set) on the built-in
// store: each clone would have its own copy of the tasks, and every task
// would be worked once per clone.
func teamStoreCheck(cfg config.Config, backend string) error {
	if cfg.Merge.Remote == "" || backend != beads.BackendBuiltin {
		return nil
	}
	return fmt.Errorf("%w: merge.remote is %q, so other clones land on the same branch, but the tasks are in the built-in store (.beads/issues.jsonl), a separate copy in every clone: each task would be done once per Chorus. Put the queue on a shared server (bd init --server, see README, \"Working as a team\") or set merge.remote to \"\" to work alone", errBuiltinTeam, cfg.Merge.Remote)
}
