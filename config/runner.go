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
	// Remote is the git remote (a name this repository has, e.g.
	// "origin") where the hub puts each task's branch, the task's pod
	// clones it from and pushes its work back to ("": merge.remote). The
	// pods never see this machine's files.
	Remote string `json:"remote,omitempty"`
	// RemoteURL is that remote as the pods reach it ("": the URL this
	// repository has for it). Credentials come from the image or
	// EnvFromSecrets (a token for a credential helper, an SSH key).
	RemoteURL string `json:"remoteURL,omitempty"`
	// Resources of each agent's container: "requests.cpu": "1",
	// "limits.memory": "4Gi", ...
	Resources map[string]string `json:"resources,omitempty"`
}

var (
	envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	secretRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[-._a-zA-Z0-9]+$`) })
	dnsRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })
)

// remoteURLRE is a URL a pod can clone from: a scheme git speaks over a
// network (or file:// for a path every node mounts), or scp-like
// user@host:path.
var remoteURLRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^((https?|ssh|git|file)://\S+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:\S+)$`)
})

// PodRemote is the git remote the pods meet the hub at.
func (r Runner) PodRemote(mergeRemote string) string {
	if r.Remote != "" {
		return r.Remote
	}
	return mergeRemote
}

// PodURL reports whether url is one a pod can reach the remote at.
func PodURL(url string) bool { return remoteURLRE().MatchString(url) }

func (r Runner) validate(add func(field string, v any, allowed string), mergeRemote string) {
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
	if r.Remote == "" && mergeRemote == "" {
		add("runner.remote", r.Remote, "the git remote the agents' pods clone their task from and push their work to (e.g. \"origin\"; \"\" takes merge.remote, which is not set either): the pods never see this machine's files")
	}
	if r.Remote != "" && (strings.HasPrefix(r.Remote, "-") || strings.ContainsAny(r.Remote, " \t\n:")) {
		add("runner.remote", r.Remote, "the name of a git remote of this repository, e.g. \"origin\"")
	}
	if r.RemoteURL != "" && !PodURL(r.RemoteURL) {
		add("runner.remoteURL", r.RemoteURL, "a URL the pods reach merge.remote at: https://…, ssh://…, git@host:path, or file://… for a path every node mounts")
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
