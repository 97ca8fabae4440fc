package kubeproc

import (
	"time"

	"github.com/chorus-dev/chorus/agent/host"
)

// Protocol is the version of the requests chorus-kube takes. One of
// another version refuses them, saying to install both from one build.
const Protocol = 1

// Config is the runner chorus-kube builds: runner.* of the config, and
// what the engine adds.
type Config struct {
	Kubeconfig string `json:"kubeconfig,omitempty"` // "": $KUBECONFIG, then ~/.kube/config
	Context    string `json:"context,omitempty"`    // "": the kubeconfig's current
	Namespace  string `json:"namespace,omitempty"`  // "": the context's, else "default"
	Instance   string `json:"instance"`             // the engine instance (its .chorus dir)
	Image      string `json:"image,omitempty"`
	Exe        string `json:"exe,omitempty"` // chorus in the image ("": on its PATH)
	WorkingDir string `json:"workingDir,omitempty"`
	Remote     string `json:"remote,omitempty"` // the git remote's URL as pods reach it
	Binary     string `json:"binary,omitempty"` // this chorus's version, told to hosts
	// Env is set in each pod; EnvFromSecrets maps a variable to
	// "secret/key"; Resources "requests.cpu" and the like to quantities.
	Env            map[string]string `json:"env,omitempty"`
	EnvFromSecrets map[string]string `json:"envFromSecrets,omitempty"`
	Resources      map[string]string `json:"resources,omitempty"`
	Orphan         time.Duration     `json:"orphan,omitempty"` // a host's wait for an engine
	Grace          time.Duration     `json:"grace,omitempty"`  // the pods' termination grace (0: the least that covers a stop)
}

// Request is what chorus-kube reads, one JSON line on its stdin; the
// operation is its argument. For start and connect the engine's side of
// the host's stream follows on stdin, and the host's comes on stdout.
type Request struct {
	Protocol int       `json:"protocol"`
	Config   Config    `json:"config"`
	Meta     host.Meta `json:"meta,omitzero"` // start, connect, stop
	Info     host.Info `json:"info,omitzero"` // ended
	Want     string    `json:"want,omitempty"`
}

// Reply is chorus-kube's answer to the operations other than start and
// connect: one JSON document on stdout.
type Reply struct {
	Error     string      `json:"error,omitempty"`
	Namespace string      `json:"namespace,omitempty"` // resolve
	Server    string      `json:"server,omitempty"`    // resolve: the API server's URL
	Metas     []host.Meta `json:"metas,omitempty"`     // list
	Ending    host.Ending `json:"ending,omitzero"`     // ended
	Findings  []Finding   `json:"findings,omitempty"`  // check, check-image
}

// Finding is one thing a check looked at: ok, or what is wrong and what
// to do.
type Finding struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Operations, chorus-kube's first argument.
const (
	OpResolve    = "resolve" // the kubeconfig read, the namespace and the resources checked
	OpStart      = "start"
	OpConnect    = "connect"
	OpList       = "list"
	OpStop       = "stop"
	OpEnded      = "ended"
	OpCheck      = "check"
	OpCheckImage = "check-image"
)

// Step is the start of a line chorus-kube writes on stderr when a start
// or connect reaches a step (for Runner.Timeline); other lines say what
// went wrong.
const Step = "step: "
