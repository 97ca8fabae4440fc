package config

import (
	"errors"
	"strings"
	"testing"
)

func TestRunnerValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Runner
		bad  []string // fields named in the error
	}{
		{"default", Runner{}, nil},
		{"local", Runner{Kind: "local"}, nil},
		{"kubernetes", Runner{Kind: "kubernetes", Image: "ghcr.io/me/agents:1", Namespace: "agents",
			Env: map[string]string{"GIT_AUTHOR_NAME": "bot"}, EnvFromSecrets: map[string]string{"ANTHROPIC_API_KEY": "agents/anthropic"},
			Resources: map[string]string{"requests.cpu": "1", "limits.memory": "4Gi"}}, nil},
		{"unknown kind", Runner{Kind: "nomad"}, []string{"runner.kind"}},
		{"no image", Runner{Kind: "kubernetes"}, []string{"runner.image"}},
		{"bad namespace", Runner{Kind: "kubernetes", Image: "x", Namespace: "Agents_1"}, []string{"runner.namespace"}},
		{"bad env and secret", Runner{Kind: "kubernetes", Image: "x", Env: map[string]string{"1X": "a"},
			EnvFromSecrets: map[string]string{"KEY": "nokey"}}, []string{"runner.env", "runner.envFromSecrets.KEY"}},
		{"no remote", Runner{Kind: "kubernetes", Image: "x"}, []string{"runner.remote"}},
		{"a remote of its own", Runner{Kind: "kubernetes", Image: "x", Remote: "pods"}, nil},
		{"bad remote name", Runner{Kind: "kubernetes", Image: "x", Remote: "-x"}, []string{"runner.remote"}},
		{"pod URL", Runner{Kind: "kubernetes", Image: "x", RemoteURL: "git@github.com:me/repo.git"}, nil},
		{"local path as pod URL", Runner{Kind: "kubernetes", Image: "x", RemoteURL: "/srv/repo.git"}, []string{"runner.remoteURL"}},
		{"bad resource", Runner{Kind: "kubernetes", Image: "x", Resources: map[string]string{"cpu": "1"}}, []string{"runner.resources"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Runner = tc.r
			if tc.r.Kind == RunnerKubernetes && tc.name != "no remote" && tc.r.Remote == "" {
				c.Merge.Remote = "origin"
			}
			err := c.Validate()
			if len(tc.bad) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a ValidationError naming %v, got %v", tc.bad, err)
			}
			var got []string
			for _, f := range ve.Fields {
				got = append(got, f.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.bad, ",") {
				t.Fatalf("fields %v, want %v (%v)", got, tc.bad, err)
			}
		})
	}
}
