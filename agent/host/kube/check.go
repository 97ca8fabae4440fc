package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Finding is one thing Check looked at: ok, or what is wrong and what to
// do.
type Finding struct {
	Check  string
	OK     bool
	Detail string
}

// need is what the runner does in its namespace, as RBAC names it.
var need = []struct {
	group, resource, sub string
	verbs                []string
}{
	{"batch", "jobs", "", []string{"create", "get", "list", "watch", "delete"}},
	{"", "pods", "", []string{"get", "list", "watch"}},
	{"", "pods", "exec", []string{"create"}},
	{"", "pods", "log", []string{"get"}}, // doctor reads the image check's output
}

// Check says whether the cluster answers and whether these credentials
// may do, in the runner's namespace, all the runner does.
func (r *Runner) Check(ctx context.Context) []Finding {
	api, err := r.api()
	if err != nil {
		return []Finding{{Check: "cluster", Detail: err.Error()}}
	}
	b, err := api.core.Get().AbsPath("/version").DoRaw(ctx)
	if err != nil {
		return []Finding{{Check: "cluster", Detail: fmt.Sprintf("%s does not answer: %v (check runner.kubeconfig and runner.context)", r.Config.Host, err)}}
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	_ = json.Unmarshal(b, &v)
	out := []Finding{{Check: "cluster", OK: true, Detail: fmt.Sprintf("%s answers (Kubernetes %s), namespace %s", r.Config.Host, v.GitVersion, r.Namespace)}}
	var missing []string
	for _, n := range need {
		for _, verb := range n.verbs {
			ok, err := api.allowed(ctx, r.Namespace, verb, n.group, n.resource, n.sub)
			if err != nil {
				return append(out, Finding{Check: "cluster access", Detail: fmt.Sprintf("asking what these credentials may do: %v", err)})
			}
			if !ok {
				res := n.resource
				if n.sub != "" {
					res += "/" + n.sub
				}
				if n.group != "" {
					res += "." + n.group
				}
				missing = append(missing, verb+" "+res)
			}
		}
	}
	if len(missing) > 0 {
		return append(out, Finding{Check: "cluster access", Detail: fmt.Sprintf("in namespace %s these credentials may not: %s; grant them with a Role and RoleBinding (the README's \"Run agents on Kubernetes\" lists the rules)",
			r.Namespace, strings.Join(missing, ", "))})
	}
	return append(out, Finding{Check: "cluster access", OK: true, Detail: "jobs, pods and pods/exec allowed in namespace " + r.Namespace})
}
