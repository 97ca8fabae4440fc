package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Detected is what project detection found in a repository.
type Detected struct {
	Type     string // go, node, python, rust, or unknown
	Name     string
	Evidence string // the file that decided it
	Quality  []QualityCommand
}

// Compiled on first use: package init runs on every CLI start.
var (
	goModuleRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^module\s+(\S+)`) })
	tomlNameRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*name\s*=\s*"([^"]+)"`) })
	tomlTableRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*\[([^\]]+)\]`) })
)

// Detect looks at marker files in root and suggests a type, a name and
// quality commands. Suggestions only: the user's config is the authority.
func Detect(root string) Detected {
	read := func(name string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(root, name))
		return string(b), err == nil
	}
	if s, ok := read("go.mod"); ok {
		d := Detected{Type: "go", Evidence: "go.mod"}
		if m := goModuleRE().FindStringSubmatch(s); m != nil {
			d.Name = filepath.Base(m[1])
		}
		d.Quality = []QualityCommand{
			{Name: "build", Command: "go build ./...", Required: true, Order: 1},
			{Name: "vet", Command: "go vet ./...", Required: false, Order: 2},
			{Name: "test", Command: "go test ./...", Required: true, Order: 3},
		}
		return withName(d, root)
	}
	if s, ok := read("package.json"); ok {
		d := Detected{Type: "node", Evidence: "package.json"}
		var pkg struct {
			Name    string            `json:"name"`
			Scripts map[string]string `json:"scripts"`
		}
		_ = json.Unmarshal([]byte(s), &pkg)
		d.Name = pkg.Name
		if _, err := os.Stat(filepath.Join(root, "tsconfig.json")); err == nil {
			d.Type = "typescript"
		}
		order := 1
		for _, sc := range []struct {
			name     string
			required bool
		}{{"typecheck", true}, {"lint", false}, {"test", true}, {"build", false}} {
			if _, ok := pkg.Scripts[sc.name]; ok {
				cmd := "npm run " + sc.name
				if sc.name == "test" {
					cmd = "npm test"
				}
				d.Quality = append(d.Quality, QualityCommand{Name: sc.name, Command: cmd, Required: sc.required, Order: order})
				order++
			}
		}
		return withName(d, root)
	}
	if s, ok := read("pyproject.toml"); ok {
		d := Detected{Type: "python", Evidence: "pyproject.toml", Name: tomlName(s, "project", "tool.poetry")}
		d.Quality = []QualityCommand{{Name: "test", Command: "python -m pytest", Required: true, Order: 1}}
		return withName(d, root)
	}
	if s, ok := read("Cargo.toml"); ok {
		d := Detected{Type: "rust", Evidence: "Cargo.toml", Name: tomlName(s, "package")}
		d.Quality = []QualityCommand{
			{Name: "build", Command: "cargo build", Required: true, Order: 1},
			{Name: "test", Command: "cargo test", Required: true, Order: 2},
			{Name: "clippy", Command: "cargo clippy", Required: false, Order: 3},
		}
		return withName(d, root)
	}
	return withName(Detected{Type: "unknown"}, root)
}

func withName(d Detected, root string) Detected {
	if d.Name == "" {
		d.Name = filepath.Base(root)
	}
	return d
}

// tomlName finds name = "…" inside the first of the given tables.
func tomlName(s string, tables ...string) string {
	for _, want := range tables {
		locs := tomlTableRE().FindAllStringSubmatchIndex(s, -1)
		for i, l := range locs {
			if strings.TrimSpace(s[l[2]:l[3]]) != want {
				continue
			}
			end := len(s)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			if m := tomlNameRE().FindStringSubmatch(s[l[1]:end]); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// PrefixFor derives a task id prefix from a project name: "my-app" → "ma".
func PrefixFor(name string) string {
	var b strings.Builder
	for _, part := range regexp.MustCompile(`[^a-zA-Z0-9]+`).Split(strings.ToLower(name), -1) {
		if part != "" {
			b.WriteByte(part[0])
		}
	}
	p := b.String()
	if len(p) < 2 {
		p = strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(name, ""))
		if len(p) > 3 {
			p = p[:3]
		}
	}
	if p == "" || p[0] < 'a' || p[0] > 'z' {
		p = "ch" + p
	}
	return p
}
