package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// consumer is a fresh module outside the repository that uses published
// modules as a new user would.
type consumer struct {
	name string
	// module is the module the consumer is about; a failure names it.
	module string
	// get are the modules it adds with go get MODULE@VERSION, and imports
	// the packages its main package imports.
	get, imports []string
	// maxModules, when set, bounds the modules of its graph (go list -m
	// all, the consumer included), none of which may start with a
	// forbidden prefix.
	maxModules int
	forbidden  []string
}

// core is the module path of the core module.
const core = "github.com/hopdag/hopdag"

// consumers are the checks of issue 29, in the order they run.
func consumers() []consumer {
	return []consumer{
		{name: "core-only", module: core, get: []string{core},
			imports:    []string{core + "/release", core + "/path", core + "/dag", core + "/runner", core + "/state", core + "/components"},
			maxModules: 25,
			forbidden:  []string{"k8s.io/", "sigs.k8s.io/", "helm.sh/", "go.etcd.io/", "oras.land/", "github.com/notaryproject/", "github.com/go-ldap/"}},
		{name: "kube", module: core + "/kube", get: []string{core + "/kube"},
			imports: []string{core + "/kube/controller", core + "/kube/apply", core + "/kube/store"}},
		{name: "etcdstore-bundle", module: core + "/state/etcdstore", get: []string{core + "/state/etcdstore", core + "/bundle"},
			imports: []string{core + "/state/etcdstore", core + "/bundle"}},
	}
}

// env is the environment of every go command of the check: modules from
// the proxy at dir first, then the Go module proxy; no workspace; no
// checksum database for hopdag's own modules (they exist only in dir); no
// module index.
func env(proxy string) []string {
	var out []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "GOWORK", "GOFLAGS", "GOPROXY", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOBIN", "GOTOOLCHAIN", "GODEBUG":
			continue
		}
		out = append(out, kv)
	}
	// goindex=0: the go command keeps an index of the packages of every
	// module in the module cache (in GOCACHE), keyed by module and version
	// on the rule that a version never changes. This check republishes
	// the same version with new content, so the index would describe the
	// files of an earlier check (imports that are gone).
	godebug := "goindex=0"
	if g := os.Getenv("GODEBUG"); g != "" {
		godebug = g + "," + godebug
	}
	return append(out, "GODEBUG="+godebug, "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",https://proxy.golang.org",
		"GONOSUMDB="+core)
}

// goCmd runs go args in dir; a failure names mod and the command.
func goCmd(mod, dir string, environ []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, environ
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("module %s: `go %s` in %s: %w\n%s", mod, strings.Join(args, " "), dir, err, trimOutput(out))
	}
	return out, nil
}

// check builds c in a new module under tmp.
func (c consumer) check(tmp, version string, environ []string, logf func(string, ...any)) error {
	start := time.Now()
	dir := filepath.Join(tmp, c.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var src strings.Builder
	src.WriteString("// Command " + c.name + " is a consumer of hopdag's published modules.\npackage main\n\nimport (\n")
	for _, p := range c.imports {
		fmt.Fprintf(&src, "\t_ %q\n", p)
	}
	src.WriteString(")\n\nfunc main() {}\n")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/"+c.name+"\n\ngo 1.26.0\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src.String()), 0o644); err != nil {
		return err
	}
	for _, m := range c.get {
		if _, err := goCmd(m, dir, environ, "get", m+"@"+version); err != nil {
			return err
		}
	}
	if _, err := goCmd(c.module, dir, environ, "build", "-o", os.DevNull, "."); err != nil {
		return err
	}
	n := 0
	if c.maxModules > 0 {
		out, err := goCmd(c.module, dir, environ, "list", "-m", "all")
		if err != nil {
			return err
		}
		var paths []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			paths = append(paths, strings.Fields(line)[0])
		}
		n = len(paths)
		var bad []string
		for _, p := range paths {
			if slices.ContainsFunc(c.forbidden, func(f string) bool { return strings.HasPrefix(p, f) }) {
				bad = append(bad, p)
			}
		}
		if n > c.maxModules || len(bad) > 0 {
			return fmt.Errorf("module %s: `go list -m all` of a consumer that imports %s lists %d modules (at most %d), %d of them forbidden (%s): %s\n%s",
				c.module, strings.Join(c.imports, ", "), n, c.maxModules, len(bad), strings.Join(c.forbidden, ", "), strings.Join(bad, ", "), strings.Join(paths, "\n"))
		}
	}
	if n > 0 {
		logf("ok %-17s %s: builds; %d modules in go list -m all (at most %d), none forbidden (%.1fs)", c.name, strings.Join(c.get, ", "), n, c.maxModules, time.Since(start).Seconds())
	} else {
		logf("ok %-17s %s: builds (%.1fs)", c.name, strings.Join(c.get, ", "), time.Since(start).Seconds())
	}
	return nil
}

// install checks go install github.com/hopdag/hopdag/cmd/hopdag@version and
// that the binary's version command prints version.
func install(tmp, version string, environ []string, logf func(string, ...any)) error {
	start := time.Now()
	const mod, pkg = core + "/cmd/hopdag", core + "/cmd/hopdag"
	bin := filepath.Join(tmp, "bin")
	environ = append(slices.Clip(environ), "GOBIN="+bin)
	if _, err := goCmd(mod, tmp, environ, "install", pkg+"@"+version); err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(bin, "hopdag"), "version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("module %s: `hopdag version` of the installed binary: %w\n%s", mod, err, out)
	}
	if !strings.HasPrefix(string(out), "hopdag "+version+" ") && strings.TrimSpace(string(out)) != "hopdag "+version {
		return fmt.Errorf("module %s: `hopdag version` of the binary go install %s@%s built printed %q, want \"hopdag %s ...\"", mod, pkg, version, strings.TrimSpace(string(out)), version)
	}
	logf("ok %-17s go install %s@%s: hopdag version prints %q (%.1fs)", "install", pkg, version, strings.TrimSpace(string(out)), time.Since(start).Seconds())
	return nil
}
