package release

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"reflect"
	"runtime"
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

// envelope is a catalog document around its spec.
type envelope struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   metadata   `yaml:"metadata"`
	Spec       *yaml.Node `yaml:"spec"`
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

// Load reads a catalog from every *.yaml and *.yml file of fsys (the
// extension in any case: .YAML too), recursively, in lexical order.
// Directories and files whose name starts with "." (.git, .github, editor
// files) are skipped. A file may hold several documents; each is
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
// constraint, duplicate, dangling reference, violated compatibility rule
// and dependency cycle is reported, all at once, as a *LoadError sorted by
// file and line, each problem with file:line, the field path and a fix. A
// problem in one field does not hide the others of its document, and a
// syntax error does not hide the documents after it: checking resumes at
// the next line that starts with "---".
//
// Cost and limits: Load parses each document once and decodes it from the
// parsed tree in one walk, so time and memory are linear in the input.
// Files are read one at a time and parsed concurrently (at most
// GOMAXPROCS at once); the result does not depend on the order parsing
// ends in. A
// document larger than 8 MiB, one whose aliases expand to more than 10,000
// values, YAML nested deeper than 10,000 levels and binary data are
// reported, not processed; at most 100 problems per file and 1,000 in all
// are listed, the rest counted ("and N more").
func Load(fsys fs.FS) (*Catalog, error) {
	var ps problems
	l := &loader{c: &Catalog{}, sn: newSpecNodes(), ps: &ps, dec: newDecoder(&ps),
		broken: map[brokenKey]Source{}, manifests: map[string]bool{}}
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			ps.add(Problem{File: p, Message: err.Error()})
			return nil
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() && catalogFile(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("release: reading catalog: %w", err)
	}
	l.parseAndDecode(fsys, files)
	l.dropManifests()
	l.c.Releases, l.c.Components, l.c.Paths = l.releases.all(), l.components.all(), l.paths.all()
	loadManifests(fsys, l.c, l.sn, &ps)
	validate(l.c, l.sn, l.broken, &ps)
	validateCycles(l.c, l.sn, &ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return l.c, nil
}

// dropManifests forgets what the files that ComponentVersions name as
// manifests gave: they are templates, not catalog documents (a Kubernetes
// manifest decodes to "unknown apiVersion").
func (l *loader) dropManifests() {
	if len(l.manifests) == 0 {
		return
	}
	l.ps.drop(l.manifests)
	l.releases.filter(func(r *Release) bool { return !l.manifests[r.Source.File] })
	l.components.filter(func(cv *ComponentVersion) bool { return !l.manifests[cv.Source.File] })
	l.paths.filter(func(p *UpgradePath) bool { return !l.manifests[p.Source.File] })
	for k, src := range l.broken {
		if l.manifests[src.File] {
			delete(l.broken, k)
		}
	}
}

// parsed is one catalog file, parsed; done is closed when it is.
type parsed struct {
	data     []byte
	docs     []document
	problems []Problem
	panicked any
	done     chan struct{}
}

// parseAndDecode reads the files, in order, on this goroutine (an fs.FS
// need not be safe for concurrent use), parses each on a goroutine of its
// own, at most GOMAXPROCS at a time, and decodes them in order on this
// goroutine as they become ready, so the result does not depend on
// scheduling. At most 2*GOMAXPROCS files are parsed and not yet decoded,
// which bounds the node trees alive at once; a decoded file's tree is
// garbage. A panic while parsing is raised again here.
//
// All files are read first (their text is kept until Load returns
// anyway, for the lines of problems found after decoding), so that the
// number of documents of each kind can be estimated from the text and the
// catalog's slices and maps sized once.
func (l *loader) parseAndDecode(fsys fs.FS, files []string) {
	jobs := make([]*parsed, len(files))
	var kinds kindCounts
	for i, name := range files {
		j := &parsed{done: make(chan struct{})}
		jobs[i] = j
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			// Dropped later if the file is a manifest (reported where it is named).
			j.problems = []Problem{{File: name, Message: err.Error()}}
			close(j.done)
			continue
		}
		j.data = data
		kinds.count(data)
	}
	l.reserve(kinds, len(files))

	workers := runtime.GOMAXPROCS(0)
	sem := make(chan struct{}, workers)
	next := 0 // the next file to decode
	decodeNext := func() {
		j := jobs[next]
		<-j.done
		if j.panicked != nil {
			panic(j.panicked)
		}
		if len(j.docs) > 0 {
			l.sn.raw[files[next]] = make([]rawDoc, 0, len(j.docs))
		}
		for _, doc := range j.docs {
			l.decode(doc)
		}
		for _, p := range j.problems {
			l.ps.add(p)
		}
		jobs[next] = nil
		next++
	}
	for i, name := range files {
		for i-next >= 2*workers {
			decodeNext()
		}
		j := jobs[i]
		if j.data == nil {
			continue // not read
		}
		data := j.data
		j.data = nil
		// Wait for a free worker, decoding what is ready meanwhile.
		for acquired := false; !acquired; {
			var ready chan struct{}
			if next < i {
				ready = jobs[next].done
			}
			select {
			case sem <- struct{}{}:
				acquired = true
			case <-ready:
				decodeNext()
			}
		}
		go func() {
			defer func() {
				j.panicked = recover()
				<-sem
				close(j.done)
			}()
			j.docs = parseFile(name, data, &j.problems)
		}()
	}
	for next < len(files) {
		decodeNext()
	}
}

// kindCounts estimates the documents of each kind in catalog text: the
// lines "kind: Release" and so on (a kind written otherwise, in flow style
// or quoted, is not counted). It sizes the loader's slices; a wrong guess
// costs a copy or some unused capacity, nothing else.
type kindCounts struct{ releases, components, paths int }

func (k *kindCounts) count(data []byte) {
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte("kind: "))
		if i < 0 {
			return
		}
		start := off + i
		off = start + len("kind: ")
		if start > 0 && data[start-1] != '\n' {
			continue
		}
		val := data[off:]
		if e := bytes.IndexByte(val, '\n'); e >= 0 {
			val = val[:e]
		}
		switch string(bytes.TrimRight(val, " \t\r")) {
		case KindRelease:
			k.releases++
		case KindComponentVersion:
			k.components++
		case KindUpgradePath:
			k.paths++
		}
	}
}

// reserve sizes what decoding fills for the documents kinds counts, in
// files files.
func (l *loader) reserve(kinds kindCounts, files int) {
	l.releases.reserve(kinds.releases)
	l.components.reserve(kinds.components)
	l.paths.reserve(kinds.paths)
	l.names = make(map[kindName]Source, kinds.releases+kinds.components+kinds.paths)
	l.sn.raw = make(map[string][]rawDoc, files)
}

// catalogFile reports whether the file at p holds catalog YAML: its
// extension is .yaml or .yml, in any case.
func catalogFile(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return ext == ".yaml" || ext == ".yml"
}

// loader holds what decoding the documents of a catalog accumulates.
type loader struct {
	c     *Catalog
	sn    *specNodes
	ps    *problems
	dec   *decoder
	env   envelope            // of the document being decoded (reused: it escapes)
	names map[kindName]Source // first document of each kind and name
	// broken holds the Release and ComponentVersion documents that could
	// not be decoded, by the version they declare.
	broken map[brokenKey]Source
	// manifests holds the cleaned paths ComponentVersions name in
	// spec.manifests[].file.
	manifests map[string]bool
	// The decoded documents, in chunks (appending to one slice of large
	// structs would copy them again and again).
	releases   chunked[Release]
	components chunked[ComponentVersion]
	paths      chunked[UpgradePath]
}

// noteBroken records a document that did not decode under the track or
// component name and version it declares, when those could be read.
func (l *loader) noteBroken(kind, name string, v Version, src Source) {
	if !v.IsZero() {
		l.broken[brokenKey{kind, name, v.Canonical()}] = src
	}
}

// decode decodes one document into the catalog. A document whose spec
// has wrong-typed values is reported and left out (noted as broken); one
// whose only problems are unknown or repeated fields joins the catalog, so
// that a typo in one document does not also make every reference to it
// look dangling. The load fails either way.
func (l *loader) decode(doc document) {
	ps, d := l.ps, l.dec
	report := func(line int, field, msg, fix string) {
		ps.add(Problem{File: doc.src.File, Line: line, Field: field, Message: msg, Fix: fix})
	}
	line := func(n *yaml.Node) int { return doc.base + n.Line }
	if doc.node.Kind != yaml.MappingNode {
		report(doc.src.Line, "", fmt.Sprintf("a catalog document must be a mapping, got %s", kindWord(doc.node)),
			"start it with apiVersion: "+APIVersion+" and kind: Release, ComponentVersion or UpgradePath")
		return
	}
	// Another apiVersion is another schema: say so, and nothing about its
	// fields. A Kubernetes manifest that no ComponentVersion names lands here.
	if n := find(doc.node, "apiVersion"); n != nil && n.Kind == yaml.ScalarNode && n.Value != "" && n.Value != APIVersion {
		fix := "use apiVersion: " + APIVersion
		if !strings.HasPrefix(n.Value, "hopdag.io/") {
			fix = "catalog documents have apiVersion: " + APIVersion + "; if this file is a manifest, name it in a ComponentVersion's spec.manifests[].file"
		}
		report(line(n), "apiVersion", fmt.Sprintf("unknown apiVersion %q", n.Value), fix)
		return
	}
	d.start(doc.src.File, doc.base)
	l.env = envelope{}
	env := &l.env
	d.decode(doc.node, reflect.ValueOf(env).Elem())
	if env.APIVersion == "" && unset(find(doc.node, "apiVersion")) {
		report(doc.src.Line, "apiVersion", "missing apiVersion", "add apiVersion: "+APIVersion)
		return
	}
	if md := find(doc.node, "metadata"); env.Metadata.Name == "" && (md == nil || md.Kind == yaml.MappingNode) && unset(find(md, "name")) {
		report(doc.src.Line, "metadata.name", "missing metadata.name", "name the document, e.g. metadata: {name: etcd-v3.5.21}")
	}
	spec := env.Spec
	switch env.Kind {
	case KindRelease, KindComponentVersion, KindUpgradePath:
		if spec == nil {
			report(doc.src.Line, "spec", "missing spec", "add the "+env.Kind+" spec")
			return
		}
	case "":
		if unset(find(doc.node, "kind")) {
			report(doc.src.Line, "kind", "missing kind", "add kind: Release, ComponentVersion or UpgradePath")
		}
		return
	default:
		report(line(find(doc.node, "kind")), "kind", fmt.Sprintf("unknown kind %q", env.Kind), "use Release, ComponentVersion or UpgradePath")
		return
	}
	before := d.typeErrs
	d.push("spec")
	switch env.Kind {
	case KindRelease:
		r := l.releases.next()
		d.decode(spec, reflect.ValueOf(r).Elem())
		if d.typeErrs > before {
			l.noteBroken(KindRelease, r.Track, r.Version, doc.src)
			l.releases.undo()
			break
		}
		r.Name, r.Source = env.Metadata.Name, doc.src
	case KindComponentVersion:
		cv := l.components.next()
		d.decode(spec, reflect.ValueOf(cv).Elem())
		l.noteManifests(spec)
		if d.typeErrs > before {
			l.noteBroken(KindComponentVersion, cv.Name, cv.Version, doc.src)
			l.components.undo()
			break
		}
		cv.Source = doc.src
	case KindUpgradePath:
		p := l.paths.next()
		d.decode(spec, reflect.ValueOf(p).Elem())
		if d.typeErrs > before {
			l.paths.undo()
			break
		}
		p.Name, p.Source = env.Metadata.Name, doc.src
		for i := range p.Rules {
			p.Rules[i].Source = Source{File: doc.src.File, Line: doc.src.Line}
			if n := find(spec, "rules", i); n != nil {
				p.Rules[i].Source.Line = line(n)
			}
		}
	}
	d.pop()
	l.sn.raw[doc.src.File] = append(l.sn.raw[doc.src.File], rawDoc{doc.src.Line, doc.text, doc.textBase})
	if env.Metadata.Name != "" {
		k := kindName{env.Kind, env.Metadata.Name}
		if first, dup := l.names[k]; dup {
			report(line(find(doc.node, "metadata", "name")), "metadata.name",
				fmt.Sprintf("duplicate %s %q (first at %s)", env.Kind, env.Metadata.Name, first), "give each document its own name")
		} else {
			l.names[k] = doc.src
		}
	}
}

// unset reports whether a required scalar is missing or empty (a value of
// another shape is reported as a wrong type instead).
func unset(n *yaml.Node) bool { return n == nil || n.Kind == yaml.ScalarNode }

// noteManifests records the files a ComponentVersion's spec names as
// manifests, whether or not the spec decodes.
func (l *loader) noteManifests(spec *yaml.Node) {
	ms := find(spec, "manifests")
	if ms == nil || ms.Kind != yaml.SequenceNode {
		return
	}
	for _, m := range ms.Content {
		if f := find(m, "file"); f != nil && f.Kind == yaml.ScalarNode && f.Value != "" {
			l.manifests[path.Clean(f.Value)] = true
		}
	}
}

type kindName struct{ kind, name string }

// loadManifests reads each manifest file into its Template. Each file is read
// once: versions that share a file share its text (strings are immutable).
func loadManifests(fsys fs.FS, c *Catalog, sn *specNodes, ps *problems) {
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
