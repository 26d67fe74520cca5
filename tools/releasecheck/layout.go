package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// goModule is one module of the repository.
type goModule struct {
	// Dir is the module's directory relative to the repository root, in
	// slash form: "." for the root.
	Dir string
	// Path is the module path, GoMod the go.mod file and File its parse.
	Path  string
	GoMod []byte
	File  *modfile.File
}

// release is the version the modules are published at, from the
// CHANGELOG's top entry.
type release struct {
	Version string
	Time    time.Time
}

// changelogEntry matches a Keep a Changelog entry heading:
// "## [0.1.0] - 2026-12-06".
var changelogEntry = regexp.MustCompile(`^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?`)

// readRelease reads the first released entry of CHANGELOG.md in root
// ([Unreleased] is skipped).
func readRelease(root string) (release, error) {
	name := filepath.Join(root, "CHANGELOG.md")
	f, err := os.Open(name)
	if err != nil {
		return release{}, fmt.Errorf("%w: the release version is the top entry of CHANGELOG.md", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		m := changelogEntry.FindStringSubmatch(sc.Text())
		if m == nil || strings.EqualFold(m[1], "unreleased") {
			continue
		}
		v := "v" + strings.TrimPrefix(m[1], "v")
		if !semver.IsValid(v) || semver.Canonical(v) != v {
			return release{}, fmt.Errorf("%s:%d: version %q is not a semantic version X.Y.Z", name, line, m[1])
		}
		if m[2] == "" {
			return release{}, fmt.Errorf("%s:%d: entry [%s] has no date: write \"## [%s] - YYYY-MM-DD\"", name, line, m[1], m[1])
		}
		t, err := time.Parse(time.DateOnly, m[2])
		if err != nil {
			return release{}, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		return release{Version: v, Time: t}, sc.Err()
	}
	if err := sc.Err(); err != nil {
		return release{}, err
	}
	return release{}, fmt.Errorf("%s: no released entry (## [X.Y.Z] - YYYY-MM-DD)", name)
}

// readModules reads go.work in root and the go.mod of every module it
// uses, except those whose directory is in skip; it returns the modules
// sorted by directory, and go.work's parse.
func readModules(root string, skip []string) ([]goModule, *modfile.WorkFile, error) {
	name := filepath.Join(root, "go.work")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the repository's modules are the ones go.work uses", err)
	}
	work, err := modfile.ParseWork(name, data, nil)
	if err != nil {
		return nil, nil, err
	}
	var mods []goModule
	for _, u := range work.Use {
		dir := filepath.ToSlash(filepath.Clean(u.Path))
		if slices.Contains(skip, dir) {
			continue
		}
		gomod := filepath.Join(root, filepath.FromSlash(dir), "go.mod")
		data, err := os.ReadFile(gomod)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: use %s: %w", name, u.Syntax.Start.Line, u.Path, err)
		}
		f, err := modfile.Parse(gomod, data, nil)
		if err != nil {
			return nil, nil, err
		}
		if f.Module == nil {
			return nil, nil, fmt.Errorf("%s: no module line", gomod)
		}
		mods = append(mods, goModule{Dir: dir, Path: f.Module.Mod.Path, GoMod: data, File: f})
	}
	slices.SortFunc(mods, func(a, b goModule) int { return strings.Compare(a.Dir, b.Dir) })
	return mods, work, nil
}

// checkLayout reports, for every module, what would stop a consumer from
// using it once published at rel: a replace directive (a consumer ignores
// it), a requirement of another module of the repository at any other
// version than rel's, a go.work without the replace that points rel's
// version of the module at its directory, and an import of another
// module's internal packages (files lists the repository's files). The
// errors are sorted and each names its module.
func checkLayout(root string, rel release, mods []goModule, work *modfile.WorkFile, files []string) []error {
	ours := map[string]goModule{}
	for _, m := range mods {
		ours[m.Path] = m
	}
	var errs []string
	for _, m := range mods {
		gomod := pathJoin(m.Dir, "go.mod")
		for _, r := range m.File.Replace {
			errs = append(errs, fmt.Sprintf("module %s: %s:%d: replace %s => %s: a consumer ignores replace directives of a dependency; remove it (go.work points the modules at the working tree)",
				m.Path, gomod, r.Syntax.Start.Line, modString(r.Old.Path, r.Old.Version), modString(r.New.Path, r.New.Version)))
		}
		for _, r := range m.File.Require {
			if _, ok := ours[r.Mod.Path]; ok && r.Mod.Version != rel.Version {
				errs = append(errs, fmt.Sprintf("module %s: %s:%d: requires %s %s, want %s (the top entry of CHANGELOG.md): a proxy serves only released versions",
					m.Path, gomod, r.Syntax.Start.Line, r.Mod.Path, r.Mod.Version, rel.Version))
			}
		}
		want := "./" + strings.TrimPrefix(m.Dir, ".")
		found := false
		for _, r := range work.Replace {
			if r.Old.Path == m.Path && r.Old.Version == rel.Version {
				found = true
				if filepath.ToSlash(filepath.Clean(r.New.Path)) != filepath.Clean(m.Dir) {
					errs = append(errs, fmt.Sprintf("module %s: go.work:%d: replace %s %s => %s, want => %s", m.Path, r.Syntax.Start.Line, m.Path, rel.Version, r.New.Path, want))
				}
			}
		}
		if !found {
			errs = append(errs, fmt.Sprintf("module %s: go.work has no \"replace %s %s => %s\": without it go list -m all and go mod download look for %s in a proxy",
				m.Path, m.Path, rel.Version, want, rel.Version))
		}
	}
	errs = append(errs, internalImports(root, mods, files)...)
	slices.Sort(errs)
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = errors.New(e)
	}
	return out
}

// internalImports reports the Go files of each module that import an
// internal package of another module of the repository: that ties the
// importer to one commit of the other module rather than to its API.
func internalImports(root string, mods []goModule, files []string) []string {
	var errs []string
	fset := token.NewFileSet()
	for _, m := range mods {
		for _, name := range moduleFiles(m.Dir, files) {
			if !strings.HasSuffix(name, ".go") {
				continue
			}
			src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
			if err != nil {
				errs = append(errs, fmt.Sprintf("module %s: %v", m.Path, err))
				continue
			}
			f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
			if err != nil {
				errs = append(errs, fmt.Sprintf("module %s: %v", m.Path, err))
				continue
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				owner := ownerOf(p, mods)
				if owner == "" || owner == m.Path {
					continue
				}
				rest := "/" + strings.TrimPrefix(p, owner) + "/"
				if strings.Contains(rest, "/internal/") {
					errs = append(errs, fmt.Sprintf("module %s: %s: imports %s, an internal package of module %s: export what both need, or move it into one module",
						m.Path, fset.Position(imp.Pos()), p, owner))
				}
			}
		}
	}
	return errs
}

// ownerOf is the module among mods that holds package p: the one with the
// longest path that is p or a prefix of p.
func ownerOf(p string, mods []goModule) string {
	owner := ""
	for _, m := range mods {
		if (p == m.Path || strings.HasPrefix(p, m.Path+"/")) && len(m.Path) > len(owner) {
			owner = m.Path
		}
	}
	return owner
}

// moduleFiles returns the files (slash paths relative to the repository
// root, sorted) under dir that belong to the module there: not those under
// a directory with a go.mod of its own.
func moduleFiles(dir string, files []string) []string {
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
	}
	var nested []string
	for _, f := range files {
		if d, ok := strings.CutSuffix(f, "/go.mod"); ok && strings.HasPrefix(f, prefix) && d+"/" != prefix {
			nested = append(nested, d+"/")
		}
	}
	var out []string
	for _, f := range files {
		if !strings.HasPrefix(f, prefix) {
			continue
		}
		if slices.ContainsFunc(nested, func(n string) bool { return strings.HasPrefix(f, n) }) {
			continue
		}
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func modString(path, version string) string {
	if version == "" {
		return path
	}
	return path + " " + version
}

// trimOutput keeps the last lines of a command's output for a message.
func trimOutput(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 30 {
		lines = append([][]byte{[]byte("...")}, lines[len(lines)-30:]...)
	}
	return string(bytes.Join(lines, []byte("\n")))
}
