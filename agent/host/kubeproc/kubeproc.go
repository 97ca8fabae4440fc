// Package kubeproc is the Kubernetes runner as chorus uses it: each call
// runs chorus-kube (cmd/chorus-kube, which links agent/host/kube and
// client-go), so chorus itself links no Kubernetes package and pays no
// Kubernetes client initialisation at each of its starts. A start or
// connect keeps chorus-kube running: the host's stream is carried over
// its stdin and stdout, and the engine's host.Client speaks on it as on
// any other connection.
package kubeproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
)

// Name is the executable's name.
const Name = "chorus-kube"

// Find is chorus-kube beside the running chorus executable, else on PATH.
func Find() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), Name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(Name); err == nil {
		return p, nil
	}
	return "", errors.New("runner.kind is kubernetes, but " + Name + ", which chorus runs to reach the cluster, is neither beside chorus nor on PATH: install it with chorus (`CGO_ENABLED=0 go install ./cmd/...` in chorus's source)")
}

// Runner runs agent hosts on Kubernetes through chorus-kube: a
// host.Runner, host.Ender and host.Remote.
type Runner struct {
	Exe    string // chorus-kube
	Config Config
	// Timeline, when set, hears when a Start or Connect reached each
	// step.
	Timeline func(agentID, step string)
}

var (
	_ host.Remote = (*Runner)(nil)
	_ host.Ender  = (*Runner)(nil)
)

// New finds chorus-kube (exe "": Find) and has it read the kubeconfig
// and check the config, so that a runner that cannot work says so before
// any agent starts. The namespace resolved is kept in the config.
func New(ctx context.Context, exe string, cfg Config) (*Runner, error) {
	if exe == "" {
		var err error
		if exe, err = Find(); err != nil {
			return nil, err
		}
	}
	r := &Runner{Exe: exe, Config: cfg}
	rep, err := r.call(ctx, OpResolve, Request{})
	if err != nil {
		return nil, err
	}
	r.Config.Namespace = rep.Namespace
	return r, nil
}

// RemoteURL is where the pods clone from and push to (host.Remote).
func (r *Runner) RemoteURL() string { return r.Config.Remote }

// call runs one operation that answers with a Reply.
func (r *Runner) call(ctx context.Context, op string, req Request) (Reply, error) {
	req.Protocol, req.Config = Protocol, r.Config
	in, err := json.Marshal(req)
	if err != nil {
		return Reply{}, err
	}
	cmd := exec.CommandContext(ctx, r.Exe, op)
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	var rep Reply
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		if err == nil {
			err = jerr
		}
		return Reply{}, fmt.Errorf("%s %s: %v %s", r.Exe, op, err, strings.TrimSpace(stderr.String()))
	}
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// List returns the hosts of this instance whose pods live.
func (r *Runner) List(ctx context.Context) ([]host.Meta, error) {
	rep, err := r.call(ctx, OpList, Request{})
	return rep.Metas, err
}

// Stop asks the host to stop its agent, then deletes the agent's Jobs and
// their pods.
func (r *Runner) Stop(ctx context.Context, m host.Meta) error {
	_, err := r.call(ctx, OpStop, Request{Meta: m})
	return err
}

// Ended says what became of the agent's pod once its stream ended without
// the agent's exit (host.Ender).
func (r *Runner) Ended(ctx context.Context, in host.Info) host.Ending {
	rep, err := r.call(ctx, OpEnded, Request{Info: in})
	if err != nil {
		return host.Ending{Why: "the exec stream to the agent's pod broke; the cluster cannot be asked why: " + err.Error()}
	}
	return rep.Ending
}

// Check says whether the cluster answers and whether these credentials
// may do all the runner does in its namespace.
func (r *Runner) Check(ctx context.Context) []Finding {
	rep, err := r.call(ctx, OpCheck, Request{})
	if err != nil {
		return []Finding{{Check: "cluster", Detail: err.Error()}}
	}
	return rep.Findings
}

// CheckImage runs `chorus --version` from the image and compares it with
// want, the hub's.
func (r *Runner) CheckImage(ctx context.Context, want string) Finding {
	rep, err := r.call(ctx, OpCheckImage, Request{Want: want})
	if err != nil || len(rep.Findings) != 1 {
		return Finding{Check: "agent image", Detail: fmt.Sprint(err)}
	}
	return rep.Findings[0]
}

// Start creates the agent's Job and connects to its host once it runs.
func (r *Runner) Start(ctx context.Context, m host.Meta) (*host.Client, error) {
	return r.stream(ctx, OpStart, m)
}

// Connect reaches a listed host.
func (r *Runner) Connect(ctx context.Context, m host.Meta) (*host.Client, error) {
	return r.stream(ctx, OpConnect, m)
}

// stream runs chorus-kube op and says hello to the host over its stdin
// and stdout, which chorus-kube relays once the pod runs and the host
// answers. Until then ctx bounds the wait: when it ends chorus-kube is
// told to give up (SIGTERM: a start's Job is deleted).
func (r *Runner) stream(ctx context.Context, op string, m host.Meta) (*host.Client, error) {
	req, err := json.Marshal(Request{Protocol: Protocol, Config: r.Config, Meta: m})
	if err != nil {
		return nil, err
	}
	c, err := startConn(r.Exe, op, append(req, '\n'), func(line string) {
		if r.Timeline != nil {
			r.Timeline(m.AgentID, line)
		}
	})
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, c.giveUp)
	cl, err := host.Handshake(context.WithoutCancel(ctx), c, Name+" "+op+" "+m.AgentID, r.Config.Binary)
	if !stop() {
		if err == nil {
			cl.Close()
		}
		return nil, fmt.Errorf("%s %s %s: %w", Name, op, m.AgentID, ctx.Err())
	}
	if err != nil {
		c.Close()
		var ev host.ErrVersion
		if errors.As(err, &ev) {
			return nil, err
		}
		if why := c.why(); why != "" {
			return nil, errors.New(why)
		}
		return nil, err
	}
	return cl, nil
}

// lines calls f with each line of r that starts with Step, and keeps the
// last of the others.
type lines struct {
	f    func(step string)
	last chan string
}

func (l *lines) read(r io.Reader) {
	var other []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), Step); ok {
			l.f(s)
		} else if t := strings.TrimSpace(sc.Text()); t != "" {
			other = append(other[max(0, len(other)-9):], t)
		}
	}
	l.last <- strings.Join(other, "; ")
}
