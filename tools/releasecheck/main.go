// Command releasecheck checks that hopdag can be used from outside its
// repository (make release-check, part of make ci). It reads the release
// version from the top entry of CHANGELOG.md and the modules from go.work
// (tools/ excluded: it is not published), then:
//
//  1. checks the layout: no go.mod has a replace directive; every module
//     requires the others at the release version; go.work points that
//     version of each module at its directory; no module imports another
//     module's internal packages;
//  2. publishes every module of the working tree (tracked and untracked
//     files that .gitignore does not exclude) at the release version into
//     a temporary file-based module proxy, zipped by golang.org/x/mod/zip;
//  3. in fresh modules outside the repository, with GOWORK=off,
//     GOFLAGS=-mod=mod and GOPROXY=file://PROXY,https://proxy.golang.org:
//     builds a program that imports only core packages (release, path,
//     dag, runner, state, components) and checks that go list -m all lists
//     at most 25 modules and no Kubernetes, Helm, etcd, OCI or notation
//     module; builds one that imports kube/controller, kube/apply and
//     kube/store after go get .../kube@VERSION; one that imports
//     state/etcdstore and bundle; and go installs cmd/hopdag@VERSION and
//     checks that its version command prints VERSION.
//
// Every failure names the module and the command. hopdag's modules are
// removed from the module cache first (and a lock file serialises
// concurrent checks), so that a version published with other content by
// an earlier check is never reused; the rest of the cache is reused, so a
// warm check downloads nothing.
//
//	cd tools && GOWORK=off go run ./releasecheck -root ..
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	root := flag.String("root", "..", "the repository root")
	skip := flag.String("skip", "tools", "comma-separated module directories of go.work that are not published")
	layoutOnly := flag.Bool("layout", false, "check the layout only (step 1): no proxy, no consumers")
	keep := flag.Bool("keep", false, "keep the temporary proxy and consumer modules (their directory is printed)")
	flag.Parse()
	if err := run(*root, strings.Split(*skip, ","), *layoutOnly, *keep); err != nil {
		fmt.Fprintf(os.Stderr, "release-check: FAIL\n%v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "release-check: "+format+"\n", args...)
}

func run(root string, skip []string, layoutOnly, keep bool) error {
	start := time.Now()
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	rel, err := readRelease(root)
	if err != nil {
		return err
	}
	mods, work, err := readModules(root, skip)
	if err != nil {
		return err
	}
	files, err := workingTree(root)
	if err != nil {
		return err
	}
	if errs := checkLayout(root, rel, mods, work, files); len(errs) > 0 {
		return errors.Join(errs...)
	}
	var paths []string
	for _, m := range mods {
		paths = append(paths, m.Path)
	}
	logf("layout ok: %d modules at %s (%s)", len(mods), rel.Version, strings.Join(paths, ", "))
	if layoutOnly {
		return nil
	}

	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	tmp, err := os.MkdirTemp("", "hopdag-release-check-")
	if err != nil {
		return err
	}
	if keep {
		logf("keeping %s", tmp)
	} else {
		defer removeAll(tmp)
	}
	proxy := filepath.Join(tmp, "proxy")
	if err := publish(proxy, root, rel, mods, files); err != nil {
		return err
	}
	logf("published %d modules at %s into file://%s", len(mods), rel.Version, proxy)
	if err := clearCache(); err != nil {
		return err
	}
	environ := env(proxy)
	var errs []error
	for _, c := range consumers() {
		if err := c.check(tmp, rel.Version, environ, logf); err != nil {
			errs = append(errs, err)
		}
	}
	if err := install(tmp, rel.Version, environ, logf); err != nil {
		errs = append(errs, err)
	}
	// What this check published must not be found by a later go command
	// that asks for the same version.
	if err := clearCache(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	logf("ok in %.1fs", time.Since(start).Seconds())
	return nil
}

// lock serialises release checks on this machine: each clears hopdag's
// modules from the shared module cache.
func lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "hopdag-release-check.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// clearCache removes hopdag's modules from the module cache (extracted
// and downloaded), which the go command keeps read-only.
func clearCache() error {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	cache := strings.TrimSpace(string(out))
	if cache == "" {
		return errors.New("go env GOMODCACHE is empty")
	}
	for _, dir := range []string{filepath.Join(cache, "cache", "download", "github.com", "hopdag"), filepath.Join(cache, "github.com", "hopdag")} {
		if err := removeAll(dir); err != nil {
			return fmt.Errorf("clearing hopdag's modules from the module cache: %w", err)
		}
	}
	return nil
}

// removeAll removes dir after making it writable (the module cache's
// directories are read-only).
func removeAll(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
