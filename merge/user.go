package merge

import (
	"context"
	"fmt"
	"strings"
)

// UserRequest validates a user's own branch for `chorus merge-user <branch>`
// and builds its Request: the branch must exist, differ from the target and
// carry commits the target lacks. The task id is derived from the branch
// ("user-<branch>", made ref-safe). The branch is never deleted after landing.
func UserRequest(ctx context.Context, repoDir, target, branch string) (Request, error) {
	branch = strings.TrimPrefix(strings.TrimSpace(branch), "refs/heads/")
	if branch == "" || strings.HasPrefix(branch, "-") {
		return Request{}, fmt.Errorf("merge-user: invalid branch name %q", branch)
	}
	if _, err := git(ctx, repoDir, "check-ref-format", "--branch", branch); err != nil {
		return Request{}, fmt.Errorf("merge-user: invalid branch name %q", branch)
	}
	if branch == target {
		return Request{}, fmt.Errorf("merge-user: %s is the target branch", branch)
	}
	head, err := git(ctx, repoDir, "rev-parse", "--verify", "-q", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return Request{}, fmt.Errorf("merge-user: no local branch %q", branch)
	}
	if in, err := isAncestor(ctx, repoDir, head, "refs/heads/"+target); err != nil {
		return Request{}, err
	} else if in {
		return Request{}, fmt.Errorf("merge-user: %s is already merged into %s", branch, target)
	}
	title, _ := git(ctx, repoDir, "log", "-1", "--format=%s", head)
	id := "user-" + strings.Trim(slugRE().ReplaceAllString(strings.ReplaceAll(branch, "/", "-"), "-"), "-.")
	if len(id) > 90 {
		id = id[:90]
	}
	id = strings.TrimRight(strings.ReplaceAll(id, "..", "-"), ".")
	if err := validTaskID(id); err != nil {
		return Request{}, err
	}
	return Request{TaskID: id, Branch: branch, Title: title, Priority: 2, User: true}, nil
}
