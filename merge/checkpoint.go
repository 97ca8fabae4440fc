package merge

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Checkpoint is a saved target tip under refs/chorus/checkpoints/.
type Checkpoint struct {
	Ref    string    `json:"ref"`
	Commit string    `json:"commit"`
	Time   time.Time `json:"time"`
}

// Compiled on first use: package init runs on every CLI start.
var slugRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// Checkpoint saves the target's current tip (before autopilot, on request).
func (s *Service) Checkpoint(ctx context.Context, reason string) (string, error) {
	return s.checkpoint(ctx, reason)
}

func (s *Service) checkpoint(ctx context.Context, reason string) (string, error) {
	tip, err := s.readTarget()
	if err != nil {
		return "", err
	}
	slug := strings.Trim(slugRE().ReplaceAllString(reason, "-"), "-.")
	if slug == "" {
		slug = "manual"
	}
	name := CheckpointPrefix + s.opt.Now().UTC().Format("20060102T150405Z") + "-" + slug
	ref := name
	for i := 2; ; i++ {
		// Create-only: never overwrite a checkpoint. (Refs outside
		// refs/heads keep no reflog, so no message is lost.)
		if err = s.in.refs.Apply(ctx, []string{"create " + ref + " " + tip}); err == nil {
			break
		}
		if i > 20 {
			return "", err
		}
		ref = name + "-" + strconv.Itoa(i)
	}
	s.emit(Event{Kind: EventCheckpoint, Message: ref, Commit: tip})
	return ref, nil
}

// Checkpoints lists the checkpoints, newest first.
func (s *Service) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	out, err := git(ctx, s.opt.RepoDir, "for-each-ref", "--sort=-creatordate", "--format=%(refname)%00%(objectname)%00%(creatordate:unix)", CheckpointPrefix)
	if err != nil {
		return nil, err
	}
	var list []Checkpoint
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\x00")
		if len(f) != 3 {
			continue
		}
		sec, _ := strconv.ParseInt(f[2], 10, 64)
		list = append(list, Checkpoint{Ref: f[0], Commit: f[1], Time: time.Unix(sec, 0)})
	}
	return list, nil
}
