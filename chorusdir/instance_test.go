package chorusdir

import (
	"encoding/json"
	"os"
	"testing"
)

// The id is made once and kept; a file copied from another checkout (or
// committed and cloned) gives way to a new id.
func TestInstanceStableAndNotCopied(t *testing.T) {
	d := At(t.TempDir())
	a, err := d.Instance()
	if err != nil {
		t.Fatal(err)
	}
	if !ValidInstanceID(a.ID) || a.Host == "" {
		t.Fatalf("instance %+v", a)
	}
	b, err := d.Instance()
	if err != nil || b.ID != a.ID {
		t.Fatalf("second read: %+v, %v; want id %s", b, err, a.ID)
	}
	other := At(t.TempDir())
	data, _ := os.ReadFile(d.InstanceFile())
	if err := os.MkdirAll(other.Path, DirMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other.InstanceFile(), data, FileMode); err != nil {
		t.Fatal(err)
	}
	c, err := other.Instance()
	if err != nil || c.ID == a.ID {
		t.Fatalf("copied file kept its id: %+v, %v", c, err)
	}
	var onDisk Instance
	data, _ = os.ReadFile(other.InstanceFile())
	if json.Unmarshal(data, &onDisk) != nil || onDisk.ID != c.ID {
		t.Fatalf("new id not written: %s", data)
	}
	for id, ok := range map[string]bool{"box-1a2b": true, "": false, "Box": false, "a/b": false, "a b": false} {
		if ValidInstanceID(id) != ok {
			t.Errorf("ValidInstanceID(%q) = %v", id, !ok)
		}
	}
}
