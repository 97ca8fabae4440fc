package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/chorus-dev/chorus/chorusdir"
)

// EnvPrefix prefixes environment overrides: CHORUS_MODE, CHORUS_AGENTS_MAXPARALLEL…
const EnvPrefix = "CHORUS"

// Loaded is a configuration together with what the loader noticed.
type Loaded struct {
	Config
	// Path is the project file read ("" when there was none).
	Path string
	// UserPath is the user-level defaults file read ("" when none).
	UserPath string
	// Warnings are non-fatal findings, such as unknown keys.
	Warnings []string
}

// SyntaxError is malformed JSON with its position.
type SyntaxError struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// ErrNotFound is returned by Load when the project file does not exist.
var ErrNotFound = errors.New("config file not found")

// UserFile is the user-level defaults file: $XDG_CONFIG_HOME/chorus/config.json
// (or ~/.config/chorus/config.json).
func UserFile() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "chorus", "config.json")
}

// Load reads the project config at path, layered over the built-in defaults
// and the user-level file, with CHORUS_* environment overrides on top, and
// validates the result. A missing project file is ErrNotFound.
func Load(path string) (*Loaded, error) {
	return load(path, UserFile(), os.Environ())
}

func load(path, userPath string, environ []string) (*Loaded, error) {
	out := &Loaded{}
	var user map[string]any
	if userPath != "" {
		m, err := readJSON(userPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			if err := checkTypes(userPath); err != nil {
				return nil, err
			}
			out.UserPath, user = userPath, m
		}
	}
	m, err := readJSON(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (run `chorus init` to create it)", path, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if err := checkTypes(path); err != nil {
		return nil, err
	}
	out.Path = path
	merged := toMap(Default())
	ct := reflect.TypeOf(Config{})
	for _, layer := range []struct {
		path string
		m    map[string]any
	}{{userPath, user}, {path, m}} {
		var unknown []string
		mergeLayer(merged, layer.m, ct, "", &unknown)
		sort.Strings(unknown)
		for _, u := range unknown {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: unknown key %q ignored", layer.path, u))
		}
	}
	// Environment overrides only for values already set, read explicitly
	// so the environment is an argument (testable) rather than global
	// state.
	slots := map[string]envSlot{}
	envKeys(merged, EnvPrefix, slots)
	for _, kv := range environ {
		k, val, ok := strings.Cut(kv, "=")
		slot, known := slots[k]
		if !ok || !known {
			continue
		}
		typed, err := envValue(k, val, slot.obj[slot.key])
		if err != nil {
			return nil, err
		}
		slot.obj[slot.key] = typed
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	var cfg Config
	// The files were checked field by field above; this catches what an
	// environment override brought in (2.5 for a whole number).
	if err := json.Unmarshal(b, &cfg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("environment override for %s: %s", te.Field, typeMsg(te))
		}
		return nil, fmt.Errorf("environment overrides: %v", err)
	}
	out.Config = cfg
	if err := cfg.Validate(); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.File = path
		}
		return out, err
	}
	return out, nil
}

// envValue turns an environment override into the type of the value it
// replaces, so it is checked like a value in the file.
func envValue(name, val string, cur any) (any, error) {
	switch cur.(type) {
	case bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return nil, fmt.Errorf("environment variable %s=%q: expected true or false", name, val)
		}
		return b, nil
	case float64, int, int64:
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return nil, fmt.Errorf("environment variable %s=%q: expected a number", name, val)
		}
		return f, nil
	}
	return val, nil
}

// checkTypes decodes the file strictly into Config, so that a value of the
// wrong type is an error naming the field and its position instead of
// being coerced (true → 1, 2.5 → 2, "0x2" → 2). Unknown keys are left to
// the loader's warnings.
func checkTypes(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	err = json.Unmarshal(data, &Config{})
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, col := position(data, te.Offset)
		return &SyntaxError{File: path, Line: line, Column: col, Msg: typeMsg(te)}
	}
	return nil // syntax errors were reported by readJSON
}

// typeMsg words a type mismatch for a person editing the file.
func typeMsg(te *json.UnmarshalTypeError) string {
	want := "a " + te.Type.String()
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		want = "a whole number such as 3 (no quotes, no fraction)"
	case reflect.Float64, reflect.Float32:
		want = "a number such as 2.5 (no quotes)"
	case reflect.Bool:
		want = "true or false (no quotes)"
	case reflect.String:
		want = "a string in double quotes"
	case reflect.Slice:
		want = "a list in [ ]"
	case reflect.Struct, reflect.Map:
		want = "an object in { }"
	}
	field := te.Field
	if field == "" {
		field = "the value"
	}
	return fmt.Sprintf("%s must be %s, found %s", field, want, te.Value)
}

// utf8BOM is what some Windows editors put at the start of a UTF-8 file;
// JSON forbids it, but it carries no meaning, so it is skipped.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ReadJSONObject parses a file holding one JSON object, turning syntax and
// type errors into file:line:column messages (*SyntaxError).
func ReadJSONObject(path string) (map[string]any, error) { return readJSON(path) }

func readJSON(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &SyntaxError{File: path, Line: 1, Column: 1, Msg: "file is empty; it must hold a JSON object (delete it and run `chorus init` to recreate it)"}
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := position(data, se.Offset)
			return nil, &SyntaxError{File: path, Line: line, Column: col, Msg: se.Error()}
		case errors.As(err, &te):
			line, col := position(data, te.Offset)
			return nil, &SyntaxError{File: path, Line: line, Column: col, Msg: "the file must hold a JSON object, found " + te.Value}
		default:
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	}
	return m, nil
}

// position converts a byte offset into 1-based line and column.
func position(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// toMap turns a Config into the generic map the layers merge into.
func toMap(c Config) map[string]any {
	b, _ := json.Marshal(c)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// Save writes c to path as indented JSON, atomically.
func Save(path string, c Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return chorusdir.WriteAtomic(path, append(b, '\n'), chorusdir.FileMode)
}
