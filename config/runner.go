package config

import (
	"regexp"
	"strings"
	"sync"
)

// Runner kinds.
const (
	RunnerLocal      = "local"
	RunnerKubernetes = "kubernetes"
)

// Runner says where agents run: on this machine (the default), or each in
// a pod of its own on Kubernetes, its agent host reached through the API
// server.
type Runner struct {
	Kind string `json:"kind,omitempty"` // "" or "local", "kubernetes"
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, then
	// ~/.kube/config); Context one of its contexts ("": its current).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	// Namespace the Jobs go in ("": the context's, else "default").
	Namespace string `json:"namespace,omitempty"`
	// Image holds chorus (at ChorusPath, or on its PATH) and what the
	// agents need: their CLI, git, the project's build tools.
	Image      string `json:"image,omitempty"`
	ChorusPath string `json:"chorusPath,omitempty"`
	WorkingDir string `json:"workingDir,omitempty"`
	// Env is set in each agent's pod; EnvFromSecrets maps a variable to
	// "secret/key" in the namespace (an API key, say).
	Env            map[string]string `json:"env,omitempty"`
	EnvFromSecrets map[string]string `json:"envFromSecrets,omitempty"`
	// Resources of each agent's container: "requests.cpu": "1",
	// "limits.memory": "4Gi", ...
	Resources map[string]string `json:"resources,omitempty"`
}

var (
	envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	secretRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[-._a-zA-Z0-9]+$`) })
	dnsRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })
)

func (r Runner) validate(add func(field string, v any, allowed string)) {
	switch r.Kind {
	case "", RunnerLocal:
		return
	case RunnerKubernetes:
	default:
		add("runner.kind", r.Kind, `"local" (the default) or "kubernetes"`)
		return
	}
	if r.Image == "" {
		add("runner.image", r.Image, "the image each agent's pod runs: it holds chorus, git and the agent's CLI")
	}
	if r.Namespace != "" && !dnsRE().MatchString(r.Namespace) {
		add("runner.namespace", r.Namespace, "a namespace name (lower-case letters, digits, -), or \"\" for the context's")
	}
	for k := range r.Env {
		if !envNameRE().MatchString(k) {
			add("runner.env", k, "variable names of letters, digits and _")
		}
	}
	for k, v := range r.EnvFromSecrets {
		if !envNameRE().MatchString(k) || !secretRE().MatchString(v) {
			add("runner.envFromSecrets."+k, v, `"secret/key" for a variable name, e.g. {"ANTHROPIC_API_KEY": "agents/anthropic"}`)
		}
	}
	for k := range r.Resources {
		kind, res, ok := strings.Cut(k, ".")
		if !ok || (kind != "requests" && kind != "limits") || res == "" {
			add("runner.resources", k, `"requests.<resource>" or "limits.<resource>", e.g. "requests.cpu": "1"`)
		}
	}
}
