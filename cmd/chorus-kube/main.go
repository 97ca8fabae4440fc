//go:build unix

// Command chorus-kube is the Kubernetes runner (agent/host/kube and
// client-go) in an executable of its own, which chorus runs for each of
// the runner's calls (agent/host/kubeproc): linked into chorus, the
// Kubernetes client's package initialisation slowed every start of it
// (status, signal, attach) and doubled its size. Install it beside
// chorus: `CGO_ENABLED=0 go install ./cmd/...`.
//
// `chorus-kube OP` reads a kubeproc.Request, one JSON line, on stdin. For
// start and connect the engine's side of the host's stream follows there
// and the host's comes on stdout; stderr says the steps reached and, if
// it fails, why. The other operations answer a kubeproc.Reply on stdout.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/agent/host/kubeproc"
)

func main() {
	// The engine decides when this ends, by closing stdin: a Ctrl-C or
	// hangup meant for it must not cut its hosts' streams, and a write to
	// an engine gone must fail rather than kill a Job's cleanup.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	// SIGTERM: the engine gave up waiting (a start's Job is deleted).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "chorus-kube: want one of resolve, start, connect, list, stop, ended, check, check-image, with a request on stdin (chorus runs it for runner.kind kubernetes)")
		return 2
	}
	op := args[0]
	in := bufio.NewReaderSize(stdin, 64<<10)
	line, err := in.ReadBytes('\n')
	var req kubeproc.Request
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err == nil && req.Protocol != kubeproc.Protocol {
		err = fmt.Errorf("chorus-kube speaks protocol %d and this chorus %d: install both from the same source (`CGO_ENABLED=0 go install ./cmd/...`)", kubeproc.Protocol, req.Protocol)
	}
	var r *kube.Runner
	var server string
	if err == nil {
		r, server, err = newRunner(req.Config)
	}
	if op == kubeproc.OpStart || op == kubeproc.OpConnect {
		if err == nil {
			err = relay(ctx, r, op == kubeproc.OpStart, req.Meta, in, stdout, stderr)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	var rep kubeproc.Reply
	if err == nil {
		rep, err = answer(ctx, r, op, req)
	}
	if err != nil {
		rep = kubeproc.Reply{Error: err.Error()}
	} else if op == kubeproc.OpResolve {
		rep.Namespace, rep.Server = r.Namespace, server
	}
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if rep.Error != "" {
		return 1
	}
	return 0
}

func answer(ctx context.Context, r *kube.Runner, op string, req kubeproc.Request) (kubeproc.Reply, error) {
	var rep kubeproc.Reply
	var err error
	switch op {
	case kubeproc.OpResolve:
	case kubeproc.OpList:
		rep.Metas, err = r.List(ctx)
	case kubeproc.OpStop:
		err = r.Stop(ctx, req.Meta)
	case kubeproc.OpEnded:
		rep.Ending = r.Ended(ctx, req.Info)
	case kubeproc.OpCheck:
		for _, f := range r.Check(ctx) {
			rep.Findings = append(rep.Findings, kubeproc.Finding(f))
		}
	case kubeproc.OpCheckImage:
		rep.Findings = []kubeproc.Finding{kubeproc.Finding(r.CheckImage(ctx, req.Want))}
	default:
		err = fmt.Errorf("chorus-kube: unknown operation %q", op)
	}
	return rep, err
}

// relay reads the engine's hello, then carries the host's stream between
// in and out once the pod runs and the host answers.
func relay(ctx context.Context, r *kube.Runner, start bool, m host.Meta, in *bufio.Reader, out, stderr io.Writer) error {
	var h [5]byte
	if _, err := io.ReadFull(in, h[:]); err != nil {
		return fmt.Errorf("reading the engine's hello: %w", err)
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > 64<<10 {
		return fmt.Errorf("the engine's first frame is %d bytes, not a hello", n)
	}
	hello := make([]byte, 5+n)
	copy(hello, h[:])
	if _, err := io.ReadFull(in, hello[5:]); err != nil {
		return fmt.Errorf("reading the engine's hello: %w", err)
	}
	r.Timeline = func(_, step string) { fmt.Fprintln(stderr, kubeproc.Step+step) }
	return r.Relay(ctx, m, start, hello, in, out)
}
