package beads

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/proc"
)

// unwrapJSON removes BD_JSON_ENVELOPE's {"schema_version","data"} wrapper
// if the user's environment turned it on.
func unwrapJSON(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"data"`)) {
		return b
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	if d, ok := m["data"]; ok && len(m) <= 2 {
		if _, sv := m["schema_version"]; sv || len(m) == 1 {
			return d
		}
	}
	return b
}

// bdIssue is an issue as bd prints it. dependencies come in two shapes:
// raw records (ready/list) or full issues with dependency_type (show).
type bdIssue struct {
	Task
	Dependencies []bdDep         `json:"dependencies"`
	Metadata     json.RawMessage `json:"metadata"`
}

type bdDep struct {
	IssueID        string    `json:"issue_id"`
	DependsOnID    string    `json:"depends_on_id"`
	Type           string    `json:"type"`
	CreatedAt      time.Time `json:"created_at"`
	CreatedBy      string    `json:"created_by"`
	ID             string    `json:"id"`
	DependencyType string    `json:"dependency_type"`
	Status         string    `json:"status"`
}

// task normalises an issue; blockerStatus maps each blocking dependency to
// its status when bd told us (show's shape).
func (b *bdIssue) task() (t Task, blockerStatus map[string]string) {
	t = b.Task
	t.Dependencies = nil
	for _, d := range b.Dependencies {
		if d.DependencyType != "" || (d.DependsOnID == "" && d.ID != "") {
			typ := d.DependencyType
			t.Dependencies = append(t.Dependencies, Dependency{IssueID: t.ID, DependsOnID: d.ID, Type: typ})
			if blockingType(typ) {
				if blockerStatus == nil {
					blockerStatus = map[string]string{}
				}
				blockerStatus[d.ID] = d.Status
			}
			continue
		}
		dep := Dependency{IssueID: d.IssueID, DependsOnID: d.DependsOnID, Type: d.Type, CreatedAt: d.CreatedAt.UTC(), CreatedBy: d.CreatedBy}
		if dep.IssueID == "" {
			dep.IssueID = t.ID
		}
		t.Dependencies = append(t.Dependencies, dep)
	}
	t.Metadata = decodeMeta(b.Metadata)
	normTimes(&t)
	return t, blockerStatus
}

func decodeMeta(raw json.RawMessage) map[string]any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' { // some bd versions print metadata as a JSON string
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		raw = []byte(s)
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}

func parseIssues(out []byte) ([]bdIssue, error) {
	out = unwrapJSON(out)
	if len(out) == 0 {
		return nil, nil
	}
	var list []bdIssue
	if out[0] == '{' {
		var one bdIssue
		if err := json.Unmarshal(out, &one); err != nil {
			return nil, fmt.Errorf("beads: reading bd output: %w", err)
		}
		return []bdIssue{one}, nil
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("beads: reading bd output: %w", err)
	}
	return list, nil
}

func toTasks(list []bdIssue) []Task {
	out := make([]Task, len(list))
	for i := range list {
		out[i], _ = list[i].task()
	}
	return out
}

func firstIssue(res proc.Result, id string) (Task, error) {
	list, err := parseIssues(res.Stdout)
	if err != nil {
		return Task{}, err
	}
	if len(list) == 0 {
		return Task{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	t, _ := list[0].task()
	return t, nil
}
