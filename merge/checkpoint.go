package merge

import (
	"context"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Checkpoint is a saved target tip under refs/chorus/checkpoints/.
type Checkpoint struct {
	Ref    string    `json:"ref"`
	Commit string    `json:"commit"`
	Time   time.Time `json:"time"` // when the checkpoint was taken (not the commit's date)
	// AtTip: the target is at this commit now, so rolling back to it
	// would change nothing.
	AtTip bool `json:"atTip,omitempty"`
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

// Checkpoints lists the checkpoints, newest first, each with its own
// time: the one in its name, for a pre-merge checkpoint the time its task
// was last handled (it is written then), else the commit's date.
func (s *Service) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	out, err := git(ctx, s.opt.RepoDir, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(creatordate:unix)", CheckpointPrefix)
	if err != nil {
		return nil, err
	}
	tip, _ := s.readTarget()
	s.mu.Lock()
	itemTime := map[string]time.Time{}
	for _, it := range s.items {
		t := it.LandedAt
		if t.IsZero() {
			t = it.UpdatedAt
		}
		itemTime[it.TaskID] = t
	}
	s.mu.Unlock()
	var list []Checkpoint
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\x00")
		if len(f) != 3 {
			continue
		}
		name := strings.TrimPrefix(f[0], CheckpointPrefix)
		t, ok := checkpointTime(name, itemTime)
		if !ok {
			sec, _ := strconv.ParseInt(f[2], 10, 64)
			t = time.Unix(sec, 0)
		}
		list = append(list, Checkpoint{Ref: f[0], Commit: f[1], Time: t, AtTip: f[1] == tip})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Time.After(list[j].Time) })
	return list, nil
}

// checkpointTime reads a checkpoint's own time from its name
// (20060102T150405Z-reason) or, for pre-merge-<task>, its task's item.
func checkpointTime(name string, itemTime map[string]time.Time) (time.Time, bool) {
	if len(name) >= 16 {
		if t, err := time.Parse("20060102T150405Z", name[:16]); err == nil {
			return t, true
		}
	}
	if id, ok := strings.CutPrefix(name, "pre-merge-"); ok {
		if t := itemTime[id]; !t.IsZero() {
			return t, true
		}
	}
	return time.Time{}, false
}
