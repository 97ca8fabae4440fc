package beads_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
)

// countCalls makes the stand-in log each subcommand and returns a reader.
func countCalls(t *testing.T) func() map[string]int {
	p := filepath.Join(t.TempDir(), "calls")
	t.Setenv("FAKEBD_COUNT", p)
	return func() map[string]int {
		b, _ := os.ReadFile(p)
		n := map[string]int{}
		for _, l := range strings.Fields(string(b)) {
			n[l]++
		}
		return n
	}
}

// inject1213 makes the next n writes fail with Dolt's serialization failure.
func inject1213(t *testing.T, n int) {
	p := filepath.Join(t.TempDir(), "1213")
	if err := os.WriteFile(p, []byte(fmt.Sprint(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKEBD_1213", p)
}

func TestBdSerializationFailureIsRetried(t *testing.T) {
	for _, mode := range []string{"", "server"} {
		t.Run("lock="+mode, func(t *testing.T) {
			t.Setenv("FAKEBD_LOCK", mode)
			repo := bdRepo(t)
			s := fakeStore(t, repo, 30*time.Second)
			x, err := s.Create(bg, "x", beads.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			calls := countCalls(t)
			inject1213(t, 2)
			got, err := s.Claim(bg, x.ID, "chorus/i1/a-x")
			if err != nil {
				t.Fatalf("Claim after two serialization failures: %v", err)
			}
			if got.Assignee != "chorus/i1/a-x" {
				t.Fatalf("claimed by %q", got.Assignee)
			}
			if n := calls()["update"]; n != 3 {
				t.Fatalf("update ran %d times, want 3 (two refused, one through)", n)
			}
			inject1213(t, 1)
			if err := s.Close(bg, x.ID, "done"); err != nil {
				t.Fatalf("Close after a serialization failure: %v", err)
			}
			if g, _ := s.Get(bg, x.ID); g.Status != beads.StatusClosed {
				t.Fatalf("status %s after Close", g.Status)
			}
		})
	}
}

func TestBdClaimThatKeepsConflictingIsLost(t *testing.T) {
	repo := bdRepo(t)
	s := fakeStore(t, repo, 30*time.Second)
	x, err := s.Create(bg, "x", beads.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inject1213(t, 100)
	_, err = s.Claim(bg, x.ID, "chorus/i1/a-x")
	if !errors.Is(err, beads.ErrClaimed) || !errors.Is(err, beads.ErrConflict) {
		t.Fatalf("Claim that always conflicts: %v; want ErrClaimed (lost race) and ErrConflict", err)
	}
}

// Several stores (several Chorus instances) claiming one task at once,
// each under its own actor, against a bd without a lock between commands:
// exactly one wins, every other gets ErrClaimed and nothing else.
func TestBdConcurrentClaimsFromSeveralInstances(t *testing.T) {
	for _, mode := range []string{"", "server"} {
		t.Run("lock="+mode, func(t *testing.T) {
			t.Setenv("FAKEBD_LOCK", mode)
			t.Setenv("FAKEBD_WINDOW", "20") // widen the read→write window
			repo := bdRepo(t)
			seed := fakeStore(t, repo, 30*time.Second)
			for round := 0; round < 3; round++ {
				x, err := seed.Create(bg, fmt.Sprint("x", round), beads.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				const n = 4
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					s := fakeStore(t, repo, 60*time.Second)
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[i] = s.Claim(bg, x.ID, fmt.Sprintf("chorus/inst%d/a-%s", i, x.ID))
					}()
				}
				wg.Wait()
				wins := 0
				for i, err := range errs {
					switch {
					case err == nil:
						wins++
					case !errors.Is(err, beads.ErrClaimed):
						t.Fatalf("claimer %d: %v; want only wins and ErrClaimed", i, err)
					}
				}
				got, _ := seed.Get(bg, x.ID)
				if wins != 1 || got.Status != beads.StatusInProgress {
					t.Fatalf("round %d: %d claimers won (%v); stored %s by %s", round, wins, errs, got.Status, got.Assignee)
				}
			}
		})
	}
}

func TestSharedValues(t *testing.T) {
	check := func(t *testing.T, s beads.Store) {
		sh, ok := s.(beads.Shared)
		if !ok {
			t.Fatalf("%s store keeps no shared values", s.Backend())
		}
		if err := sh.SetShared(bg, "chorus.instance.a", `{"beat":"x"}`); err != nil {
			t.Fatal(err)
		}
		if err := sh.SetShared(bg, "chorus.instance.b", "2"); err != nil {
			t.Fatal(err)
		}
		if err := sh.SetShared(bg, "other", "3"); err != nil {
			t.Fatal(err)
		}
		got, err := sh.SharedValues(bg, "chorus.instance.")
		if err != nil || len(got) != 2 || got["chorus.instance.a"] != `{"beat":"x"}` {
			t.Fatalf("SharedValues = %v, %v", got, err)
		}
		if err := sh.ClearShared(bg, "chorus.instance.a"); err != nil {
			t.Fatal(err)
		}
		got, _ = sh.SharedValues(bg, "chorus.")
		if len(got) != 1 || got["chorus.instance.b"] != "2" {
			t.Fatalf("after clear: %v", got)
		}
	}
	t.Run("bd", func(t *testing.T) { check(t, fakeStore(t, bdRepo(t), 30*time.Second)) })
	t.Run("builtin", func(t *testing.T) {
		repo := initRepo(t)
		s := open(t, beads.OpenOptions{RepoDir: repo}, beads.BackendBuiltin)
		if _, err := s.Create(bg, "x", beads.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		check(t, s)
		if out := git(t, repo, "status", "--porcelain", "--", ".beads/chorus-cache"); out != "" {
			t.Fatalf("shared values show in git status:\n%s", out)
		}
	})
}
