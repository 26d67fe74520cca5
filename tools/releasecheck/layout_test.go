package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// writeRepo writes files (slash paths) under a new directory and returns it.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// goodRepo is a repository that passes: a core and a nested module that
// requires it at the CHANGELOG's version, and a tools module not published.
func goodRepo() map[string]string {
	return map[string]string{
		"CHANGELOG.md":         "# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-12-06\n\n### Added\n- all\n\n## [0.0.9] - 2026-11-01\n",
		"go.work":              "go 1.26.0\n\nuse (\n\t.\n\t./kube\n\t./tools\n)\n\nreplace (\n\tgithub.com/hopdag/hopdag v0.1.0 => ./\n\tgithub.com/hopdag/hopdag/kube v0.1.0 => ./kube\n)\n",
		"go.mod":               "module github.com/hopdag/hopdag\n\ngo 1.26.0\n",
		"internal/codec/c.go":  "package codec\n",
		"state/s.go":           "package state\n\nimport _ \"github.com/hopdag/hopdag/internal/codec\"\n",
		"kube/go.mod":          "module github.com/hopdag/hopdag/kube\n\ngo 1.26.0\n\nrequire github.com/hopdag/hopdag v0.1.0\n",
		"kube/store/store.go":  "package store\n\nimport _ \"github.com/hopdag/hopdag/state\"\n",
		"kube/internal/x/x.go": "package x\n",
		"tools/go.mod":         "module github.com/hopdag/hopdag/tools\n\ngo 1.26.0\n\nreplace example.com/x => ../x\n",
	}
}

func TestCheckLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit map[string]string // files to replace in goodRepo
		want []string          // one substring per expected error, in order
	}{
		{"good", nil, nil},
		{"nested module requires v0.0.0",
			map[string]string{"kube/go.mod": "module github.com/hopdag/hopdag/kube\n\ngo 1.26.0\n\nrequire github.com/hopdag/hopdag v0.0.0\n"},
			[]string{"module github.com/hopdag/hopdag/kube: kube/go.mod:5: requires github.com/hopdag/hopdag v0.0.0, want v0.1.0"}},
		{"nested module requires a pseudo-version",
			map[string]string{"kube/go.mod": "module github.com/hopdag/hopdag/kube\n\ngo 1.26.0\n\nrequire github.com/hopdag/hopdag v0.0.0-00010101000000-000000000000\n"},
			[]string{"module github.com/hopdag/hopdag/kube: kube/go.mod:5: requires github.com/hopdag/hopdag v0.0.0-00010101000000-000000000000, want v0.1.0"}},
		{"nested module has a replace",
			map[string]string{"kube/go.mod": "module github.com/hopdag/hopdag/kube\n\ngo 1.26.0\n\nrequire github.com/hopdag/hopdag v0.1.0\n\nreplace github.com/hopdag/hopdag => ..\n"},
			[]string{"module github.com/hopdag/hopdag/kube: kube/go.mod:7: replace github.com/hopdag/hopdag => ..: a consumer ignores replace directives"}},
		{"core has a replace",
			map[string]string{"go.mod": "module github.com/hopdag/hopdag\n\ngo 1.26.0\n\nreplace example.com/y v1.0.0 => example.com/z v1.0.1\n"},
			[]string{"module github.com/hopdag/hopdag: go.mod:5: replace example.com/y v1.0.0 => example.com/z v1.0.1"}},
		{"go.work lacks a replace",
			map[string]string{"go.work": "go 1.26.0\n\nuse (\n\t.\n\t./kube\n\t./tools\n)\n\nreplace github.com/hopdag/hopdag v0.1.0 => ./\n"},
			[]string{`module github.com/hopdag/hopdag/kube: go.work has no "replace github.com/hopdag/hopdag/kube v0.1.0 => ./kube"`}},
		{"go.work points elsewhere",
			map[string]string{"go.work": "go 1.26.0\n\nuse (\n\t.\n\t./kube\n\t./tools\n)\n\nreplace (\n\tgithub.com/hopdag/hopdag v0.1.0 => ./\n\tgithub.com/hopdag/hopdag/kube v0.1.0 => ./state\n)\n"},
			[]string{"module github.com/hopdag/hopdag/kube: go.work:11: replace github.com/hopdag/hopdag/kube v0.1.0 => ./state, want => ./kube"}},
		{"internal import across modules",
			map[string]string{"kube/store/store.go": "package store\n\nimport _ \"github.com/hopdag/hopdag/internal/codec\"\n"},
			[]string{"module github.com/hopdag/hopdag/kube: kube/store/store.go:3:8: imports github.com/hopdag/hopdag/internal/codec, an internal package of module github.com/hopdag/hopdag"}},
		{"core imports a nested module's internal package",
			map[string]string{"state/s.go": "package state\n\nimport _ \"github.com/hopdag/hopdag/kube/internal/x\"\n"},
			[]string{"module github.com/hopdag/hopdag: state/s.go:3:8: imports github.com/hopdag/hopdag/kube/internal/x, an internal package of module github.com/hopdag/hopdag/kube"}},
		{"two problems, both reported",
			map[string]string{"kube/go.mod": "module github.com/hopdag/hopdag/kube\n\ngo 1.26.0\n\nrequire github.com/hopdag/hopdag v0.0.0\n\nreplace github.com/hopdag/hopdag => ..\n"},
			[]string{"kube/go.mod:5: requires github.com/hopdag/hopdag v0.0.0", "kube/go.mod:7: replace github.com/hopdag/hopdag => .."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := goodRepo()
			for k, v := range tc.edit {
				files[k] = v
			}
			root := writeRepo(t, files)
			rel, err := readRelease(root)
			if err != nil {
				t.Fatalf("readRelease: %v", err)
			}
			mods, work, err := readModules(root, []string{"tools"})
			if err != nil {
				t.Fatalf("readModules: %v", err)
			}
			var names []string
			for name := range files {
				names = append(names, name)
			}
			errs := checkLayout(root, rel, mods, work, names)
			if len(errs) != len(tc.want) {
				t.Fatalf("checkLayout: %d errors, want %d:\n%v", len(errs), len(tc.want), errors.Join(errs...))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("checkLayout error %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestReadRelease(t *testing.T) {
	for _, tc := range []struct {
		name, changelog, want, wantErr string
	}{
		{"top released entry", "## [Unreleased]\n## [1.2.3] - 2026-12-06\n## [1.2.2] - 2026-11-06\n", "v1.2.3", ""},
		{"prerelease", "## [0.2.0-rc.1] - 2026-12-06\n", "v0.2.0-rc.1", ""},
		{"no date", "## [0.1.0]\n", "", "CHANGELOG.md:1: entry [0.1.0] has no date"},
		{"not semver", "## [0.1] - 2026-12-06\n", "", `CHANGELOG.md:1: version "0.1" is not a semantic version`},
		{"nothing released", "# Changelog\n## [Unreleased]\n", "", "no released entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeRepo(t, map[string]string{"CHANGELOG.md": tc.changelog})
			rel, err := readRelease(root)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("readRelease = %v, %v; want an error containing %q", rel, err, tc.wantErr)
				}
				return
			}
			if err != nil || rel.Version != tc.want {
				t.Fatalf("readRelease = %v, %v; want %s", rel.Version, err, tc.want)
			}
		})
	}
}

func TestModuleFiles(t *testing.T) {
	files := []string{"go.mod", "a.go", "kube/go.mod", "kube/k.go", "kube/sub/go.mod", "kube/sub/s.go", "tools/go.mod", "tools/t.go"}
	for _, tc := range []struct{ dir, want string }{
		{".", "a.go go.mod"},
		{"kube", "kube/go.mod kube/k.go"},
		{"kube/sub", "kube/sub/go.mod kube/sub/s.go"},
	} {
		if got := strings.Join(moduleFiles(tc.dir, files), " "); got != tc.want {
			t.Errorf("moduleFiles(%q) = %s, want %s", tc.dir, got, tc.want)
		}
	}
}

// publish writes the proxy layout, and each zip holds its module's files
// only (a nested module's are in its own zip).
func TestPublish(t *testing.T) {
	files := goodRepo()
	root := writeRepo(t, files)
	rel, err := readRelease(root)
	if err != nil {
		t.Fatal(err)
	}
	mods, _, err := readModules(root, []string{"tools"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	proxy := t.TempDir()
	if err := publish(proxy, root, rel, mods, names); err != nil {
		t.Fatalf("publish: %v", err)
	}
	for _, tc := range []struct{ path, dir, want string }{
		{"github.com/hopdag/hopdag", "github.com/hopdag/hopdag/@v", "CHANGELOG.md go.mod internal/codec/c.go state/s.go"},
		{"github.com/hopdag/hopdag/kube", "github.com/hopdag/hopdag/kube/@v", "go.mod internal/x/x.go store/store.go"},
	} {
		list, err := os.ReadFile(filepath.Join(proxy, tc.dir, "list"))
		if err != nil || string(list) != "v0.1.0\n" {
			t.Errorf("%s/list = %q, %v; want v0.1.0", tc.dir, list, err)
		}
		info, err := os.ReadFile(filepath.Join(proxy, tc.dir, "v0.1.0.info"))
		if err != nil || string(info) != `{"Version":"v0.1.0","Time":"2026-12-06T00:00:00Z"}` {
			t.Errorf("%s/v0.1.0.info = %s, %v", tc.dir, info, err)
		}
		cf, err := zip.CheckZip(module.Version{Path: tc.path, Version: "v0.1.0"}, filepath.Join(proxy, tc.dir, "v0.1.0.zip"))
		if err != nil {
			t.Fatalf("CheckZip %s: %v", tc.path, err)
		}
		if got := strings.ReplaceAll(strings.Join(cf.Valid, " "), tc.path+"@v0.1.0/", ""); got != tc.want {
			t.Errorf("zip of %s holds %s, want %s", tc.path, got, tc.want)
		}
	}
}
