package ptyproc

import (
	"strings"
)

// buildEnv is the agent's environment: the parent's, less the names in
// unset or add, then add (less the names in unset).
func buildEnv(parent, add, unset []string) []string {
	drop := map[string]bool{}
	for _, k := range unset {
		drop[k] = true
	}
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	env := make([]string, 0, len(parent)+len(add))
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		if !slicesContains(unset, k) {
			env = append(env, kv)
		}
	}
	return env
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
