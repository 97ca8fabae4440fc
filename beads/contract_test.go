package beads_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/beads/storetest"
)

func open(t *testing.T, opt beads.OpenOptions, want string) beads.Store {
	t.Helper()
	s, err := beads.Open(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if s.Backend() != want {
		t.Fatalf("backend %q, want %q", s.Backend(), want)
	}
	if sd, ok := s.(interface{ Shutdown() }); ok {
		t.Cleanup(sd.Shutdown)
	}
	return s
}

func TestContractBuiltin(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Env {
		repo := initRepo(t)
		s := open(t, beads.OpenOptions{RepoDir: repo, Prefix: "ch-", Actor: "tester"}, beads.BackendBuiltin)
		return storetest.Env{Store: s, RepoDir: repo, Prefix: "ch", Exact: true}
	})
}

func TestContractFakeBd(t *testing.T) {
	bd := fakeBd(t)
	storetest.Run(t, func(t *testing.T) storetest.Env {
		repo := bdRepo(t)
		s := open(t, beads.OpenOptions{RepoDir: repo, Actor: "tester", BdPath: bd, Timeout: 30 * time.Second}, beads.BackendBd)
		return storetest.Env{Store: s, RepoDir: repo, Prefix: "ch"}
	})
}

// With CHORUS_TEST_BD=/path/to/bd the same contract runs against real bd.
func TestContractRealBd(t *testing.T) {
	bd := os.Getenv("CHORUS_TEST_BD")
	if bd == "" {
		t.Skip("set CHORUS_TEST_BD=/path/to/bd to run the contract against real bd")
	}
	t.Setenv("BD_EXPORT_AUTO", "false")
	storetest.Run(t, func(t *testing.T) storetest.Env {
		repo := initRepo(t)
		cmd := exec.Command(bd, "init", "--non-interactive", "--skip-hooks", "--skip-agents", "--prefix", "ch")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bd init: %v\n%s", err, out)
		}
		s := open(t, beads.OpenOptions{RepoDir: repo, Actor: "tester", BdPath: bd, Timeout: 2 * time.Minute}, beads.BackendBd)
		return storetest.Env{Store: s, RepoDir: repo, Prefix: "ch"}
	})
}
