package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/release"
)

// ErrNotObjects is matched by the error ReadDir returns for a document that
// is not a valid catalog object: the API server would refuse it, so no
// cluster can hold it.
var ErrNotObjects = errors.New("catalog: not a catalog object")

// ReadDir reads a catalog directory into the objects that `kubectl apply`
// would create from it (to seed a cluster, or to compare the loaders). It
// reads every *.yaml file under dir (recursively, in lexical
// order). Documents of another apiVersion are left out, and so are the
// files that ComponentVersions name as manifests, in spec.manifests or in
// a lifecycle phase's manifests (templates need not be YAML). Documents
// are cut apart before they are parsed, as kubectl does, so an alias
// cannot name an anchor of another document. Each catalog document is
// decoded strictly into its v1alpha1 type,
// namespace empty; a document that does not decode gives an error matching
// ErrNotObjects.
func ReadDir(dir string) (*Objects, error) {
	objs := &Objects{}
	broken := map[string]error{} // files that did not parse, by path relative to dir
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// Documents are cut apart first, as kubectl does (apimachinery's
		// YAMLReader): an alias cannot reach an anchor of another document.
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			var doc map[string]any
			text, err := docs.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err == nil {
				err = yaml.Unmarshal(text, &doc)
			}
			if err != nil {
				rel, _ := filepath.Rel(dir, p)
				broken[filepath.ToSlash(rel)] = fmt.Errorf("%w: %s: %v", ErrNotObjects, p, err)
				return nil
			}
			if doc == nil || doc["apiVersion"] != release.APIVersion {
				if s, _ := doc["apiVersion"].(string); strings.HasPrefix(s, "hopdag.io/") {
					return fmt.Errorf("%w: %s: apiVersion %s", ErrNotObjects, p, s)
				}
				continue
			}
			if err := add(objs, doc); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotObjects, p, err)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, cv := range objs.Components {
		for _, f := range manifestFiles(&cv.Spec) {
			delete(broken, f)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(broken)) {
		return nil, broken[f]
	}
	return objs, nil
}

func add(objs *Objects, doc map[string]any) error {
	js, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	decode := func(out any) error {
		d := json.NewDecoder(bytes.NewReader(js))
		d.DisallowUnknownFields()
		return d.Decode(out)
	}
	switch doc["kind"] {
	case release.KindRelease:
		var r v1alpha1.Release
		if err := decode(&r); err != nil {
			return err
		}
		objs.Releases = append(objs.Releases, r)
	case release.KindComponentVersion:
		var cv v1alpha1.ComponentVersion
		if err := decode(&cv); err != nil {
			return err
		}
		objs.Components = append(objs.Components, cv)
	case release.KindUpgradePath:
		var up v1alpha1.UpgradePath
		if err := decode(&up); err != nil {
			return err
		}
		objs.UpgradePaths = append(objs.UpgradePaths, up)
	default:
		return fmt.Errorf("unknown kind %v", doc["kind"])
	}
	return nil
}
