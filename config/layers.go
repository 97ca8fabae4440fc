package config

import (
	"reflect"
	"strings"
	"unicode"
)

// Layering without viper: viper lower-cases every key and splits keys on
// '.', so a profile named "claude-3.5" came back as "claude-3" holding
// "5", and a key was reported in a spelling the user never wrote. Here
// the layers are JSON objects merged along Config's own shape: an object
// key is matched to a struct field as encoding/json matches it (exact
// json name, else case-insensitively) and written under that name; map
// keys (agent names) are kept exactly as written.

// mergeLayer merges over into base along type t (a struct or a map):
// objects merge key by key, anything else (values, lists) replaces. Keys
// no field of t takes are left out and reported, with their path, in
// unknown.
func mergeLayer(base, over map[string]any, t reflect.Type, path string, unknown *[]string) {
	for k, v := range over {
		name, ft, ok := member(t, k)
		if !ok {
			*unknown = append(*unknown, path+k)
			continue
		}
		sub, isObj := v.(map[string]any)
		into, baseObj := base[name].(map[string]any)
		if isObj && (ft.Kind() == reflect.Struct || ft.Kind() == reflect.Map) {
			if !baseObj {
				into = map[string]any{}
				base[name] = into
			}
			mergeLayer(into, sub, ft, path+name+".", unknown)
			continue
		}
		base[name] = v
	}
}

// member finds key k in t: for a struct, the field encoding/json would
// fill (its canonical json name); for a map, the key itself.
func member(t reflect.Type, k string) (name string, ft reflect.Type, ok bool) {
	switch t.Kind() {
	case reflect.Map:
		return k, deref(t.Elem()), true
	case reflect.Struct:
		var fold reflect.StructField
		found := false
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			n := jsonName(f)
			if n == "" {
				continue
			}
			if n == k {
				return n, deref(f.Type), true
			}
			if !found && strings.EqualFold(n, k) {
				fold, found = f, true
			}
		}
		if found {
			return jsonName(fold), deref(fold.Type), true
		}
	}
	return "", nil, false
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	if n, _, _ := strings.Cut(tag, ","); n != "" {
		return n
	}
	return f.Name
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// envKeys maps the environment variable that may override each value set
// in m (CHORUS_AGENTS_MAXPARALLEL for agents.maxParallel) to the object
// holding it and its key. Only values already set (the defaults set every
// field) and not objects or lists can be overridden, as before. A key's
// characters other than letters and digits become '_' in the name.
func envKeys(m map[string]any, prefix string, out map[string]envSlot) {
	for k, v := range m {
		name := prefix + "_" + envPart(k)
		switch v := v.(type) {
		case map[string]any:
			envKeys(v, name, out)
		case []any:
		default:
			out[name] = envSlot{obj: m, key: k}
		}
	}
}

type envSlot struct {
	obj map[string]any
	key string
}

func envPart(k string) string {
	return strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return unicode.ToUpper(r)
		}
		return '_'
	}, k)
}
