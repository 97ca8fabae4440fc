package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// doctor with runner.kind kubernetes asks the cluster what the
// credentials may do: a user without the Role is told which verbs are
// missing and where to find the rules; with the README's rules bound to
// it, the check passes.
func TestDoctorChecksTheClusterRunner(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	// Doctor reaches the cluster through chorus-kube, found on PATH (this
	// test's executable has none beside it).
	t.Setenv("PATH", filepath.Dir(testkit.ChorusKube(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes", "--prefix", "ch"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	cfgPath := filepath.Join(dir, ".chorus", "config.json")
	var cfg map[string]any
	b, _ := os.ReadFile(cfgPath)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	// The pods meet the hub on a git remote.
	bare := filepath.Join(t.TempDir(), "remote.git")
	testkit.Git(t, dir, "init", "-q", "--bare", bare)
	testkit.Git(t, dir, "remote", "add", "origin", "file://"+bare)
	cfg["runner"] = map[string]any{"kind": "kubernetes", "remote": "origin", "kubeconfig": c.UserKubeconfig(t, "bob"), "namespace": "default", "image": "agents:1"}
	b, _ = json.Marshal(cfg)
	os.WriteFile(cfgPath, b, 0o600)

	doctor := func() map[string]finding {
		t.Helper()
		r := chorus(t, dir, "doctor", "--json")
		var rep doctorReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("doctor --json: %v\n%s%s", err, r.stdout, r.stderr)
		}
		got := map[string]finding{}
		for _, f := range rep.Findings {
			got[f.Check] = f
		}
		if f, ok := got["agent image"]; ok {
			t.Logf("agent image: %s: %s", f.Level, f.Detail)
		}
		return got
	}
	got := doctor()
	if f := got["cluster"]; f.Level != levelOK || !strings.Contains(f.Detail, "v1.34.4") {
		t.Fatalf("cluster: %+v", f)
	}
	if f := got["cluster access"]; f.Level != levelFail || !strings.Contains(f.Detail, "create jobs.batch") ||
		!strings.Contains(f.Detail, "create pods/exec") || !strings.Contains(f.Detail, "README") {
		t.Fatalf("cluster access without a Role: %+v", f)
	}
	if f, ok := got["agent image"]; ok {
		t.Fatalf("the image checked without the access it needs: %+v", f)
	}

	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "chorus-agents"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	}}
	if _, err := c.Client.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "chorus-agents"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "chorus-agents"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "bob"}}}
	if _, err := c.Client.RbacV1().RoleBindings("default").Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = doctor()
	if f := got["cluster access"]; f.Level != levelOK {
		t.Fatalf("cluster access with the README's Role: %+v", f)
	}
	// The image check runs `chorus --version` in a Job of the image (the
	// test node ignores images: runner.chorusPath picks what runs).
	if f := got["agent image"]; f.Level != levelFail || !strings.Contains(f.Detail, "set runner.chorusPath") {
		t.Fatalf("agent image without chorus in it: %+v", f)
	}
	setChorus := func(path string) {
		cfg["runner"].(map[string]any)["chorusPath"] = path
		b, _ := json.Marshal(cfg)
		os.WriteFile(cfgPath, b, 0o600)
	}
	setChorus(testkit.Chorus(t))
	if f := doctor()["agent image"]; f.Level != levelFail || !strings.Contains(f.Detail, "but this hub is \"chorus 1.2.3") ||
		!strings.Contains(f.Detail, "build the image with this chorus") {
		t.Fatalf("agent image of another chorus: %+v", f)
	}
	same := filepath.Join(t.TempDir(), "chorus")
	hub := "chorus " + BuildInfo{Version: "1.2.3", Commit: "abc", Date: "today"}.String()
	os.WriteFile(same, []byte("#!/bin/sh\necho '"+hub+"'\n"), 0o755)
	setChorus(same)
	if f := doctor()["agent image"]; f.Level != levelOK || !strings.Contains(f.Detail, hub) {
		t.Fatalf("agent image of this chorus: %+v", f)
	}
	jobs, err := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: "chorus.dev/doctor=image"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if j.DeletionTimestamp == nil {
			t.Errorf("doctor left its Job %s", j.Name)
		}
	}
}
