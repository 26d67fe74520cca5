package release

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// APIVersion is the apiVersion every catalog document declares.
const APIVersion = "hopdag.io/v1alpha1"

// Kinds of catalog documents.
const (
	KindRelease          = "Release"
	KindComponentVersion = "ComponentVersion"
	KindUpgradePath      = "UpgradePath"
)

// document is one YAML document of a catalog file, before its spec is decoded.
type document struct {
	src  Source
	node *yaml.Node // the document's mapping node
}

type envelope struct {
	APIVersion string    `yaml:"apiVersion"`
	Kind       string    `yaml:"kind"`
	Metadata   metadata  `yaml:"metadata"`
	Spec       yaml.Node `yaml:"spec"`
}

type metadata struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// LoadDir is Load(os.DirFS(dir)).
func LoadDir(dir string) (*Catalog, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("release: catalog directory: %w", err)
	}
	return Load(os.DirFS(dir))
}

// Load reads a catalog from every *.yaml and *.yml file of fsys, recursively,
// in lexical order. A file may hold several documents; each is
// Kubernetes-style:
//
//	apiVersion: hopdag.io/v1alpha1
//	kind: Release | ComponentVersion | UpgradePath
//	metadata: {name: ...}
//	spec: {...}
//
// Files that a ComponentVersion names in spec.manifests[].file (paths
// relative to the root of fsys) are manifest templates, not catalog
// documents; Load reads them into Manifest.Template.
//
// Loading is strict: every unknown field, wrong type, invalid version or
// constraint, duplicate, dangling reference and violated compatibility rule
// is reported, all at once, as a *LoadError sorted by file and line, each
// problem with file:line, the field path and a fix. Load does not follow
// dependency chains, so a dependency cycle cannot make it hang; the dag
// package reports cycles.
func Load(fsys fs.FS) (*Catalog, error) {
	var ps problems
	type parsed struct {
		name string
		docs []document
		err  *Problem
	}
	var files []parsed
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			ps.add(Problem{File: p, Message: err.Error()})
			return nil
		}
		ext := path.Ext(p)
		if d.IsDir() || (ext != ".yaml" && ext != ".yml") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			// Reported below unless the file is a manifest (reported where it is named).
			files = append(files, parsed{p, nil, &Problem{File: p, Message: err.Error()}})
			return nil
		}
		docs, perr := parseFile(p, data)
		files = append(files, parsed{p, docs, perr})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("release: reading catalog: %w", err)
	}

	var all []document
	for _, f := range files {
		all = append(all, f.docs...)
	}
	manifests := manifestFiles(all)
	l := &loader{c: &Catalog{}, sn: specNodes{}, ps: &ps, names: map[kindName]Source{}, broken: map[brokenKey]Source{}}
	for _, f := range files {
		if manifests[f.name] {
			continue
		}
		if f.err != nil {
			ps.add(*f.err)
		}
		for _, d := range f.docs {
			l.decode(d)
		}
	}
	loadManifests(fsys, l.c, l.sn, &ps)
	validate(l.c, l.sn, l.broken, &ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return l.c, nil
}

// loader holds what decoding the documents of a catalog accumulates.
type loader struct {
	c     *Catalog
	sn    specNodes
	ps    *problems
	names map[kindName]Source // first document of each kind and name
	// broken holds the Release and ComponentVersion documents that could
	// not be decoded, by the version they declare.
	broken map[brokenKey]Source
}

// noteBroken records a document that did not decode under the track or
// component name and version it declares, when those can be read.
func (l *loader) noteBroken(kind string, spec *yaml.Node, nameKey string, src Source) {
	vn := find(spec, "version")
	if vn == nil || vn.Kind != yaml.ScalarNode {
		return
	}
	v, err := ParseVersion(vn.Value)
	if err != nil {
		return
	}
	name := ""
	if n := find(spec, nameKey); n != nil && n.Kind == yaml.ScalarNode {
		name = n.Value
	}
	l.broken[brokenKey{kind, name, v.Canonical()}] = src
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// parseFile splits a file into YAML documents. A syntax error ends the file:
// the documents before it are kept.
func parseFile(name string, data []byte) ([]document, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []document
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			p := &Problem{File: name, Message: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: "), Fix: "fix the YAML syntax"}
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				p.Line, _ = strconv.Atoi(m[1])
				p.Message = "invalid YAML: " + strings.TrimPrefix(yamlLine.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), ""), ": ")
			}
			return docs, p
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			continue // an empty document between "---" separators
		}
		docs = append(docs, document{src: Source{File: name, Line: n.Content[0].Line}, node: n.Content[0]})
	}
}

// manifestFiles returns the cleaned paths that ComponentVersion documents
// name as manifest files.
func manifestFiles(docs []document) map[string]bool {
	out := map[string]bool{}
	for _, d := range docs {
		if k := find(d.node, "kind"); k == nil || k.Value != KindComponentVersion {
			continue
		}
		ms := find(d.node, "spec", "manifests")
		if ms == nil || ms.Kind != yaml.SequenceNode {
			continue
		}
		for _, m := range ms.Content {
			if f := find(m, "file"); f != nil && f.Kind == yaml.ScalarNode && f.Value != "" {
				out[path.Clean(f.Value)] = true
			}
		}
	}
	return out
}

func (l *loader) decode(d document) {
	c, sn, ps := l.c, l.sn, l.ps
	report := func(line int, field, msg, fix string) {
		ps.add(Problem{File: d.src.File, Line: line, Field: field, Message: msg, Fix: fix})
	}
	if d.node.Kind != yaml.MappingNode {
		report(d.src.Line, "", fmt.Sprintf("a catalog document must be a mapping, got %s", kindWord(d.node)),
			"start it with apiVersion: "+APIVersion+" and kind: Release, ComponentVersion or UpgradePath")
		return
	}
	// Another apiVersion is another schema: say so, and nothing about its
	// fields. A Kubernetes manifest that no ComponentVersion names lands here.
	if n := find(d.node, "apiVersion"); n != nil && n.Kind == yaml.ScalarNode && n.Value != "" && n.Value != APIVersion {
		fix := "use apiVersion: " + APIVersion
		if !strings.HasPrefix(n.Value, "hopdag.io/") {
			fix = "catalog documents have apiVersion: " + APIVersion + "; if this file is a manifest, name it in a ComponentVersion's spec.manifests[].file"
		}
		report(n.Line, "apiVersion", fmt.Sprintf("unknown apiVersion %q", n.Value), fix)
		return
	}
	var env envelope
	if !decodeStrict(d.node, &env, "", report) {
		// The envelope's problems are reported. If it still decodes (say,
		// an unknown metadata field), go on and check the spec too, so that
		// one run reports every problem of the document.
		if d.node.Decode(&env) != nil {
			return
		}
	}
	if env.APIVersion == "" {
		report(d.src.Line, "apiVersion", "missing apiVersion", "add apiVersion: "+APIVersion)
		return
	}
	if env.Metadata.Name == "" {
		report(d.src.Line, "metadata.name", "missing metadata.name", "name the document, e.g. metadata: {name: etcd-v3.5.21}")
	}
	// A spec whose only problems are unknown fields (reported by
	// decodeStrict) still decodes leniently and joins the catalog, so that a
	// typo in one document does not also make every reference to it look
	// dangling. The load fails either way.
	spec := &env.Spec
	if spec.Kind == 0 {
		report(d.src.Line, "spec", "missing spec", "add the "+env.Kind+" spec")
		return
	}
	switch env.Kind {
	case KindRelease:
		var r Release
		if decodeStrict(spec, &r, "spec", report) || spec.Decode(&r) == nil {
			r.Name, r.Source = env.Metadata.Name, d.src
			c.Releases = append(c.Releases, r)
			sn[d.src] = spec
		} else {
			l.noteBroken(KindRelease, spec, "track", d.src)
		}
	case KindComponentVersion:
		var cv ComponentVersion
		if decodeStrict(spec, &cv, "spec", report) || spec.Decode(&cv) == nil {
			cv.Source = d.src
			c.Components = append(c.Components, cv)
			sn[d.src] = spec
		} else {
			l.noteBroken(KindComponentVersion, spec, "name", d.src)
		}
	case KindUpgradePath:
		var p UpgradePath
		if decodeStrict(spec, &p, "spec", report) || spec.Decode(&p) == nil {
			p.Name, p.Source = env.Metadata.Name, d.src
			for i := range p.Rules {
				p.Rules[i].Source = Source{File: d.src.File, Line: find(spec, "rules", i).Line}
			}
			c.Paths = append(c.Paths, p)
			sn[d.src] = spec
		}
	case "":
		report(d.src.Line, "kind", "missing kind", "add kind: Release, ComponentVersion or UpgradePath")
		return
	default:
		report(find(d.node, "kind").Line, "kind", fmt.Sprintf("unknown kind %q", env.Kind), "use Release, ComponentVersion or UpgradePath")
		return
	}
	if env.Metadata.Name != "" {
		k := kindName{env.Kind, env.Metadata.Name}
		if first, dup := l.names[k]; dup {
			report(find(d.node, "metadata", "name").Line, "metadata.name",
				fmt.Sprintf("duplicate %s %q (first at %s)", env.Kind, env.Metadata.Name, first), "give each document its own name")
		} else {
			l.names[k] = d.src
		}
	}
}

type kindName struct{ kind, name string }

// loadManifests reads each manifest file into its Template. Each file is read
// once: versions that share a file share its text (strings are immutable).
func loadManifests(fsys fs.FS, c *Catalog, sn specNodes, ps *problems) {
	type read struct {
		data string
		err  error
	}
	files := map[string]read{}
	for i := range c.Components {
		cv := &c.Components[i]
		for j := range cv.Manifests {
			m := &cv.Manifests[j]
			if m.Name == "" {
				if m.File != "" {
					m.Name = m.File
				} else {
					m.Name = "inline-" + strconv.Itoa(j)
				}
			}
			if m.File == "" {
				continue
			}
			if m.Template != "" {
				ps.add(sn.at(cv.Source, "manifests", j).with("a manifest needs exactly one of file and template", "remove template to read the file, or remove file to use the inline template"))
				continue
			}
			name := path.Clean(m.File)
			f, ok := files[name]
			if !ok {
				data, err := fs.ReadFile(fsys, name)
				f = read{string(data), err}
				files[name] = f
			}
			if err := f.err; err != nil {
				msg := fmt.Sprintf("manifest file %s: %v", m.File, err)
				if errors.Is(err, fs.ErrNotExist) {
					msg = fmt.Sprintf("manifest file %s does not exist", m.File)
				}
				ps.add(sn.at(cv.Source, "manifests", j, "file").with(msg, "write the path relative to the catalog root, or use template for inline YAML"))
				continue
			}
			m.Template = f.data
		}
	}
}
