package beads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Shared is implemented by stores that keep small values every user of the
// task store can read: bd's key-value store (on a shared Dolt server, every
// machine of a team sees it), or a file beside the built-in store's tasks.
// Chorus instances working one queue leave their heartbeats there.
type Shared interface {
	SetShared(ctx context.Context, key, value string) error
	// SharedValues returns the values whose key starts with prefix.
	SharedValues(ctx context.Context, prefix string) (map[string]string, error)
	ClearShared(ctx context.Context, key string) error
}

func checkSharedKey(key string) error {
	if key == "" || strings.ContainsAny(key, " \t\n") || strings.HasPrefix(key, "kv.") {
		return fmt.Errorf("beads: bad shared key %q (no spaces, not starting with kv.)", key)
	}
	return nil
}

func (s *bdStore) SetShared(ctx context.Context, key, value string) error {
	if err := checkSharedKey(key); err != nil {
		return err
	}
	return s.write(ctx, func() error {
		_, err := s.run(ctx, "", "kv", "set", "--json", "--", key, value)
		return err
	})
}

func (s *bdStore) ClearShared(ctx context.Context, key string) error {
	if err := checkSharedKey(key); err != nil {
		return err
	}
	return s.write(ctx, func() error {
		_, err := s.run(ctx, "", "kv", "clear", "--json", "--", key)
		return err
	})
}

func (s *bdStore) SharedValues(ctx context.Context, prefix string) (map[string]string, error) {
	res, err := s.run(ctx, "", "kv", "list", "--json")
	if err != nil {
		return nil, err
	}
	// bd 1.0.5 puts "schema_version": 1 among the pairs: keep the strings.
	var raw map[string]any
	if err := json.Unmarshal(unwrapJSON(res.Stdout), &raw); err != nil {
		return nil, fmt.Errorf("beads: bd kv list: unreadable answer: %v", err)
	}
	all := map[string]string{}
	for k, v := range raw {
		if s, ok := v.(string); ok {
			all[k] = s
		}
	}
	return withPrefix(all, prefix), nil
}

func withPrefix(all map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range all {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// The built-in store keeps shared values in a git-ignored file of its
// cache directory: they describe running instances, not the project.
func (s *builtinStore) sharedPath() string {
	return filepath.Join(s.dir, readyCacheDir, "shared.json")
}

func (s *builtinStore) readShared() (map[string]string, error) {
	b, err := os.ReadFile(s.sharedPath())
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	all := map[string]string{}
	if err := json.Unmarshal(b, &all); err != nil {
		// Only heartbeats live here; a torn file is rewritten by the next set.
		return map[string]string{}, nil
	}
	return all, nil
}

func (s *builtinStore) changeShared(ctx context.Context, fn func(map[string]string)) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	all, err := s.readShared()
	if err != nil {
		return err
	}
	fn(all)
	dir := filepath.Dir(s.sharedPath())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ign := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ign); errors.Is(err, fs.ErrNotExist) {
		if err := atomicReplace(ign, []byte("# Derived from ../issues.jsonl by Chorus; safe to delete.\n*\n")); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(all)
	return atomicReplace(s.sharedPath(), b)
}

func (s *builtinStore) SetShared(ctx context.Context, key, value string) error {
	if err := checkSharedKey(key); err != nil {
		return err
	}
	return s.changeShared(ctx, func(m map[string]string) { m[key] = value })
}

func (s *builtinStore) ClearShared(ctx context.Context, key string) error {
	if err := checkSharedKey(key); err != nil {
		return err
	}
	return s.changeShared(ctx, func(m map[string]string) { delete(m, key) })
}

func (s *builtinStore) SharedValues(_ context.Context, prefix string) (map[string]string, error) {
	all, err := s.readShared()
	if err != nil {
		return nil, err
	}
	return withPrefix(all, prefix), nil
}
