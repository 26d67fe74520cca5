package components

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

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
// Dir is a ReadyChecker whose checks are ready at once: a directory has
// nothing to wait for.
//
// Dir is safe for concurrent use; its operations run one at a time.
type Dir struct {
	path string
	cfg  applierConfig
	mu   sync.Mutex
}

// NewDir returns a Dir that writes under path; Apply creates it when
// missing. The options are WithTakeOver and WithReporter.
func NewDir(path string, opts ...ApplierOption) *Dir {
	return &Dir{path: path, cfg: newApplierConfig(opts)}
}

// Apply writes each object's file, in order. It stops at the first error:
// an object CheckOwner refuses leaves its file, and the files of the
// objects after it, as they were.
func (d *Dir) Apply(ctx context.Context, objs []Object, opts ApplyOptions) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range objs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := fileOf(o)
		if err != nil {
			return err
		}
		path := filepath.Join(d.path, rel)
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
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fmt.Errorf("%s%s: %w", prefix, o, err)
			}
			if err := replaceFile(path, data); err != nil {
				return fmt.Errorf("%s%s: %w", prefix, o, err)
			}
		}
		d.cfg.emit(Action{Verb: "apply", Object: o, Options: opts, Reason: reason})
	}
	return nil
}

// Delete removes each object's file; a missing file is not an error.
func (d *Dir) Delete(ctx context.Context, objs []Object) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range objs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := fileOf(o)
		if err != nil {
			return err
		}
		path := filepath.Join(d.path, rel)
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
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("%sinventory of %s: %w", prefix, inv.Component, err)
	}
	if err := writeFileAtomic(p, data); err != nil {
		return fmt.Errorf("%sinventory of %s: %w", prefix, inv.Component, err)
	}
	return nil
}

// writeFileAtomic is replaceFile, except that a file that already holds
// data is not rewritten.
func writeFileAtomic(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return replaceFile(path, data)
}

// replaceFile replaces path with data through a synced temporary file in
// the same directory and a rename. It leaves no temporary file behind.
func replaceFile(path string, data []byte) (err error) {
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
