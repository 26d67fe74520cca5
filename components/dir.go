package components

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/release"
)

// clusterDir holds the files of cluster-scoped objects; "_" cannot start a
// namespace name, so it never clashes with one.
const clusterDir = "_cluster"

// Dir is an Applier that writes rendered objects to a directory, for GitOps
// review and offline sites: one file per object, holding its rendered YAML,
// at
//
//	<path>/<namespace>/<kind>[.<group>]_<name>.yaml   a namespaced object
//	<path>/_cluster/<kind>[.<group>]_<name>.yaml      a cluster-scoped one
//
// with the kind in lower case and the API group after it unless it is the
// core group ("kube-system/deployment.apps_coredns.yaml",
// "kube-system/configmap_coredns.yaml"). The name depends only on the
// object's identity, so a later version of the object replaces the file
// and a diff of the directory is a diff of the cluster's desired state.
//
// Dir is an InventoryStore: each component's inventory is the file
// <path>/.hopdag/inventory/<instance>/<component>.yaml, so a Manifest
// prunes the files of objects a version no longer renders; Delete leaves a
// file whose object's labels name another component.
//
// Apply checks ownership as every Applier of the module does (CheckOwner),
// against the labels in the file it replaces: a file whose object is
// labelled as another component's or another instance's is not
// rewritten, Apply returning a runner.Permanent *OwnerError, unless
// WithTakeOver; a file without ownership labels (written by hand, by
// another tool) is adopted, its Action's Reason saying so (WithReporter).
// Without the check, a second instance rendering the same object would
// relabel the file, and its prune would later remove the file the first
// instance's inventory still lists.
//
// Every write is atomic: the content goes to a temporary file in the same
// directory, is synced, and is renamed over the target, so a reader (or a
// crash) sees the old file or the new one, never a part. A file whose
// content would not change is not rewritten. Delete removes the file, and
// the namespace directory when it becomes empty.
//
// Every change is durable when its call returns: before Apply, Delete or
// SaveInventory returns, Dir syncs (fsync(2)) the directory of each file
// it wrote, kept or removed and every directory above it up to the one
// that holds the Dir's path, once each, and the parent of each directory
// it created. A synced file whose rename was not synced is lost with a
// power cut on most file systems; an apply the run's status records as
// done must survive one, also when an earlier attempt renamed the file
// and died before its sync (the file is then unchanged, and its
// directory is synced all the same). A failed sync is the call's error.
//
// Dir is a ReadyChecker whose checks are ready at once: a directory has
// nothing to wait for.
//
// Dir is safe for concurrent use; its operations run one at a time.
type Dir struct {
	path string
	cfg  applierConfig
	mu   sync.Mutex
	// syncDir syncs a directory: syncDir, or a test's recorder.
	syncDir func(dir string) error
}

// NewDir returns a Dir that writes under path; Apply creates it when
// missing. The options are WithTakeOver and WithReporter.
func NewDir(path string, opts ...ApplierOption) *Dir {
	return &Dir{path: path, cfg: newApplierConfig(opts), syncDir: syncDir}
}

// Apply writes each object's file, in order. It stops at the first error:
// an object CheckOwner refuses leaves its file, and the files of the
// objects after it, as they were.
func (d *Dir) Apply(ctx context.Context, objs []Object, opts ApplyOptions) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	written := map[string]Object{} // directory: its first object
	for _, o := range objs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := fileOf(o)
		if err != nil {
			return err
		}
		path := filepath.Join(d.path, rel)
		if _, ok := written[filepath.Dir(path)]; !ok {
			written[filepath.Dir(path)] = o
		}
		old, err := os.ReadFile(path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s%s: %w", prefix, o, err)
		}
		var reason string
		if _, _, owned := Owner(o); exists && owned {
			var live map[string]any
			if err := yaml.Unmarshal(old, &live); err != nil {
				return fmt.Errorf("%s%s: %s: %w; fix or delete the file", prefix, o, path, err)
			}
			if reason, err = CheckOwner(o, labelsOf(live), d.cfg.takeOver); err != nil {
				return err
			}
		}
		data := []byte(o.YAML)
		if !exists || !bytes.Equal(old, data) {
			if err := d.mkdirAll(filepath.Dir(path)); err != nil {
				return fmt.Errorf("%s%s: %w", prefix, o, err)
			}
			if err := d.replaceFile(path, data); err != nil {
				return fmt.Errorf("%s%s: %w", prefix, o, err)
			}
		}
		d.cfg.emit(Action{Verb: "apply", Object: o, Options: opts, Reason: reason})
	}
	return d.syncAll(written)
}

// Delete removes each object's file; a missing file is not an error.
func (d *Dir) Delete(ctx context.Context, objs []Object) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	removed := map[string]Object{} // directory: its first object
	for _, o := range objs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := fileOf(o)
		if err != nil {
			return err
		}
		path := filepath.Join(d.path, rel)
		if _, ok := removed[filepath.Dir(path)]; !ok {
			removed[filepath.Dir(path)] = o
		}
		inst, comp, owned := Owner(o)
		if owned || pruneStage(o.Ref()) > 0 {
			live, err := readObjectFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return fmt.Errorf("%s%s: %w", prefix, o, err)
			}
			if owned && !OwnedBy(labelsOf(live), inst, comp) {
				continue
			}
			hs, err := d.holds(o.Ref(), live)
			if err != nil {
				return fmt.Errorf("%s%s: %w", prefix, o, err)
			}
			if len(hs) > 0 {
				d.cfg.emit(Action{Verb: "skip", Object: o, Reason: keepReason(hs)})
				continue
			}
		}
		err = os.Remove(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return fmt.Errorf("%s%s: %w", prefix, o, err)
		}
		// Remove fails on a directory that still holds files: that is the
		// check that it became empty.
		_ = os.Remove(filepath.Dir(path))
		d.cfg.emit(Action{Verb: "delete", Object: o})
	}
	return d.syncAll(removed)
}

// syncAll syncs each directory of dirs and the directories above it
// (syncUp), in sorted order, naming the directory's first object in an
// error.
func (d *Dir) syncAll(dirs map[string]Object) error {
	done := map[string]bool{}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		if err := d.syncUp(dir, done); err != nil {
			return fmt.Errorf("%s%s: %w", prefix, dirs[dir], err)
		}
	}
	return nil
}

// readObjectFile reads the object a file of the directory holds.
func readObjectFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}

// refOfContent is the identity of a file's object in namespace ns (the
// file's directory: the object's namespace after defaulting).
func refOfContent(obj map[string]any, ns string) Ref {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	g, v := splitAPIVersion(av)
	return Ref{Group: g, Version: v, Kind: kind, Namespace: ns, Name: name}
}

// holds returns the objects whose files are in the directory, other than
// r's, that deleting r (whose file holds live) would delete in a cluster
// (see cascade): the files of a Namespace's directory, or of a CRD's
// kind in every directory.
func (d *Dir) holds(r Ref, live map[string]any) ([]held, error) {
	in, ok := cascade(r, live)
	if !ok {
		return nil, nil
	}
	dirs, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	var hs []held
	for _, dir := range dirs {
		if !dir.IsDir() || strings.HasPrefix(dir.Name(), ".") {
			continue
		}
		files, err := os.ReadDir(filepath.Join(d.path, dir.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if f.IsDir() || !strings.HasSuffix(f.Name(), ".yaml") || strings.HasPrefix(f.Name(), ".") {
				continue
			}
			obj, err := readObjectFile(filepath.Join(d.path, dir.Name(), f.Name()))
			if err != nil {
				return nil, err
			}
			ns := dir.Name()
			if ns == clusterDir {
				ns = ""
			}
			x := refOfContent(obj, ns)
			if x.key() != r.key() && in(x) {
				hs = append(hs, held{ref: x, labels: labelsOf(obj)})
			}
		}
	}
	return hs, nil
}

// syncUp syncs dir and each directory above it up to the one that holds
// d.path, each once (done), skipping those that do not exist (removed):
// every entry on the way to a file is then durable, including one an
// interrupted earlier call made or removed and did not sync.
func (d *Dir) syncUp(dir string, done map[string]bool) error {
	top := filepath.Dir(filepath.Clean(d.path))
	for {
		if !done[dir] {
			done[dir] = true
			if _, err := os.Stat(dir); err == nil {
				if err := d.sync(dir); err != nil {
					return err
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if dir == top || dir == filepath.Dir(dir) {
			return nil
		}
		dir = filepath.Dir(dir)
	}
}

// Ready reports true: written files have nothing to wait for.
func (d *Dir) Ready(ctx context.Context, _ release.HealthCheck, _ []Object) (bool, error) {
	return ctx.Err() == nil, ctx.Err()
}

// fileOf is the path of an object's file relative to the directory.
func fileOf(o Object) (string, error) {
	r := o.Ref()
	ns := r.Namespace
	if ns == "" {
		ns = clusterDir
	}
	for _, part := range []string{r.Namespace, r.Group, r.Kind, r.Name} {
		if !safePart(part) {
			return "", fmt.Errorf("%s%s: cannot be written to a file: %q is not a safe file name part", prefix, o, part)
		}
	}
	kind := strings.ToLower(r.Kind)
	if r.Group != "" {
		kind += "." + r.Group
	}
	return filepath.Join(ns, kind+"_"+r.Name+".yaml"), nil
}

func safePart(s string) bool {
	return !strings.ContainsAny(s, `/\`+"\x00") && s != "." && s != ".."
}

// inventoryFile is the path of a component's inventory file.
func (d *Dir) inventoryFile(instance, component string) (string, error) {
	if !safePart(instance) || !safePart(component) || instance == "" || component == "" {
		return "", fmt.Errorf("%sinventory of %s/%s: not a safe file name", prefix, instance, component)
	}
	return filepath.Join(d.path, ".hopdag", "inventory", instance, component+".yaml"), nil
}

// Inventories reads the inventory files of instance, sorted by component.
func (d *Dir) Inventories(ctx context.Context, instance string) ([]Inventory, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	dir, err := d.inventoryFile(instance, "x")
	if err != nil {
		return nil, err
	}
	dir = filepath.Dir(dir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("%sinventories: %w", prefix, err)
	}
	var out []Inventory
	for _, e := range entries { // sorted by file name
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%sinventories: %w", prefix, err)
		}
		var inv Inventory
		if err := yaml.Unmarshal(data, &inv); err != nil {
			return nil, fmt.Errorf("%sinventory %s: %w; delete the file to forget what the component applied", prefix, p, err)
		}
		out = append(out, inv)
	}
	return out, nil
}

// SaveInventory writes the component's inventory file atomically.
func (d *Dir) SaveInventory(ctx context.Context, inv Inventory) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.inventoryFile(inv.Instance, inv.Component)
	if err != nil {
		return err
	}
	data, err := yaml.Marshal(inv)
	if err != nil {
		return fmt.Errorf("%sinventory of %s: %w", prefix, inv.Component, err)
	}
	if err := d.mkdirAll(filepath.Dir(p)); err != nil {
		return fmt.Errorf("%sinventory of %s: %w", prefix, inv.Component, err)
	}
	if err := d.writeFileAtomic(p, data); err != nil {
		return fmt.Errorf("%sinventory of %s: %w", prefix, inv.Component, err)
	}
	if err := d.syncUp(filepath.Dir(p), map[string]bool{}); err != nil {
		return fmt.Errorf("%sinventory of %s: %w", prefix, inv.Component, err)
	}
	return nil
}

// writeFileAtomic is replaceFile, except that a file that already holds
// data is not rewritten.
func (d *Dir) writeFileAtomic(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return d.replaceFile(path, data)
}

// replaceFile replaces path with data through a synced temporary file in
// the same directory and a rename (which the caller makes durable:
// syncUp). It leaves no temporary file behind.
func (d *Dir) replaceFile(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// mkdirAll is os.MkdirAll (mode 0755) that syncs the parent of each
// directory it creates, so that the new entry is durable.
func (d *Dir) mkdirAll(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := d.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return d.sync(parent)
}

// sync makes dir's entries durable (d.syncDir; syncDir for a zero Dir).
func (d *Dir) sync(dir string) error {
	if d.syncDir == nil {
		return syncDir(dir)
	}
	return d.syncDir(dir)
}

// syncDir fsyncs the directory dir. File systems that cannot sync a
// directory (EINVAL) and Windows, where a directory cannot be opened for
// it, have nothing to sync.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
