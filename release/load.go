package release

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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

// LoadDir is Load(os.DirFS(dir)), and refuses a dir that is a file or
// holds no catalog document (a mistyped path would pass as an empty
// catalog).
func LoadDir(dir string) (*Catalog, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("release: catalog directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("release: catalog directory: %s is a file, not a directory: give the directory that holds the catalog (%s)", dir, filepath.Dir(dir))
	}
	c, err := Load(os.DirFS(dir))
	if err == nil && len(c.Releases) == 0 && len(c.Components) == 0 && len(c.Paths) == 0 {
		return nil, fmt.Errorf("%w: %s holds no catalog document: no .yaml or .yml file in it (hidden directories and Helm charts left out) has a Release, ComponentVersion or UpgradePath; check the path", ErrInvalidCatalog, dir)
	}
	return c, err
}

// Load reads a catalog from every *.yaml and *.yml file of fsys (the
// extension in any case: .YAML too), recursively, in lexical order.
// Directories and files whose name starts with "." (.git, .github, editor
// files) are skipped, and so are Helm chart directories (those holding a
// Chart.yaml: a helm component's chart may live in the catalog, its path
// relative to the root). Catalog and manifest files must be regular
// files or symbolic links to them, of at most 64 MiB: a named pipe, a
// device, a link to a directory and a larger file are reported, not read
// (of a file that grows while read, at most 64 MiB and one byte are
// read). A file may hold several documents; each is Kubernetes-style:
//
//	apiVersion: hopdag.io/v1alpha1
//	kind: Release | ComponentVersion | UpgradePath
//	metadata: {name: ...}
//	spec: {...}
//
// Files that a ComponentVersion names in spec.manifests[].file (paths
// relative to the root of fsys) are manifest templates, not catalog
// documents; Load reads them into Manifest.Template. A local Helm chart
// (spec.helm.chart a path relative to the root, not oci:// or a chart of
// a repo) must be in fsys, a directory or a .tgz archive.
//
// Loading is strict: every unknown field, wrong type, invalid version or
// constraint, duplicate, dangling reference, violated compatibility rule
// and dependency cycle is reported, all at once, as a *LoadError sorted by
// file and line, each problem with file:line, the field path and a fix.
// What is well formed but does nothing in the catalog (a rule whose from
// admits no version or names its to, a supports range that admits no
// release of its track) does not fail Load: Catalog.Warnings lists it,
// the same way. A message quotes at most 200 bytes of a value.
// The values of params, env, labels and annotations are strings: an
// unquoted true, 3 or empty value is refused (quote it). A problem in one
// field does not hide the others of its document (a wrong-typed value is
// left out and the rest of the document is checked, its references too),
// and a syntax error does not hide the documents after it: checking
// resumes at the next line that starts with "---".
//
// Cost and limits: Load parses each document once and decodes it from the
// parsed tree in one walk, so time and memory are linear in the input.
// Documents in the part of YAML catalogs are usually written in (block
// style indented with spaces, one-line scalars and flow collections,
// literal blocks, no anchors or tags) are parsed by a fast path that builds
// the tree yaml.v3 would (Load is about three times faster on them); the
// others, and every syntax error, by yaml.v3. An anchor belongs to its
// document.
// Files are read one at a time, then cut into pieces of whole documents
// that are parsed concurrently (at most GOMAXPROCS at once) and decoded in
// order; the result does not depend on the order parsing ends in. A
// document larger than 8 MiB, one whose aliases expand to more than 10,000
// values or bring in more than 1 MiB of values (the bytes of the scalars
// they name, counted per alias), YAML nested deeper than 10,000 levels and binary data are
// reported, not processed; at most 100 problems per file and 1,000 in all
// are listed, the rest counted ("and N more").
func Load(fsys fs.FS) (*Catalog, error) { return load(fsys, true) }

// load is Load, with the fast path of parsing (fastParse) or without it.
func load(fsys fs.FS, fast bool) (*Catalog, error) { return newLoader(fast).load(fsys) }

func newLoader(fast bool) *loader {
	ps := &problems{}
	return &loader{c: &Catalog{}, sn: newSpecNodes(), ps: ps, dec: newDecoder(ps), fast: fast,
		broken: map[brokenKey]Source{}, manifests: map[string]bool{}}
}

// load reads fsys into l's catalog. A catalog without problems has each
// of its documents parsed once: l.sn parses a document again only to
// locate a problem in it.
func (l *loader) load(fsys fs.FS) (*Catalog, error) {
	ps := l.ps
	files, _, err := walk(fsys, func(p string, err error) { ps.add(problemOf(p, err)) })
	if err != nil {
		return nil, fmt.Errorf("release: reading catalog: %w", err)
	}
	l.parseAndDecode(fsys, files)
	l.dropManifests()
	l.c.Releases, l.c.Components, l.c.Paths = l.releases.all(), l.components.all(), l.paths.all()
	loadManifests(fsys, l.c, l.sn, ps)
	checkCharts(fsys, l.c, l.sn, ps)
	ws := &problems{}
	validate(l.c, l.sn, l.broken, ps, ws)
	validateCycles(l.c, l.sn, ps)
	validateBeforeAll(l.c, l.sn, ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	l.c.warnings = ws.sorted()
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

// piece is a run of consecutive documents of one file, parsed as a unit;
// done is closed when it is.
type piece struct {
	file  string
	data  []byte // the whole file's text
	spans []span // the piece's documents (none when the file could not be read)
	// first and last say whether the piece is the first or last of its
	// file; docs of a first piece counts the file's documents.
	first, last bool
	docs        int
	parsed      []document
	arena       *nodeArena // of the nodes of parsed
	problems    []Problem
	panicked    any
	done        chan struct{}
}

// pieceBytes is about how much text one piece holds: a file is cut into
// pieces at document boundaries, so that large files spread over the
// workers and only the node trees of a few pieces are alive at once. (A
// variable for TestLoadPieces, which checks that cutting changes nothing.)
var pieceBytes = 256 << 10

// parseAndDecode reads the files, in order, on this goroutine (an fs.FS
// need not be safe for concurrent use), cuts each into pieces of whole
// documents (on GOMAXPROCS goroutines), parses each piece on a goroutine of its own, at most
// GOMAXPROCS at a time, and decodes the pieces in order on this goroutine
// as they become ready, so the result does not depend on scheduling. At
// most 2*GOMAXPROCS pieces are parsed and not yet decoded, which bounds the
// node trees alive at once; a decoded piece's tree is garbage. A panic
// while parsing is raised again here.
//
// Cutting is exact: a line that starts with "---" begins a document
// wherever it is (splitDocuments), and a syntax error stops at the end of
// its document at the latest, so a piece parses as it would inside its
// file. The problems of parsing a file are added after its last document
// is decoded, as for a file parsed whole.
//
// All files are read first (their text is kept until Load returns
// anyway, for the lines of problems found after decoding), so that the
// number of documents of each kind can be estimated from the text and the
// catalog's slices and maps sized once.
func (l *loader) parseAndDecode(fsys fs.FS, files []string) {
	type read struct {
		data  []byte
		err   error
		spans []span
		kinds kindCounts
	}
	reads := make([]read, len(files))
	for i, name := range files {
		reads[i].data, reads[i].err = readFile(fsys, name)
	}
	workers := runtime.GOMAXPROCS(0)
	// Cut the files into documents and count their kinds, in parallel.
	var nextRead atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(files)) {
		wg.Go(func() {
			for {
				i := int(nextRead.Add(1) - 1)
				if i >= len(reads) {
					return
				}
				if r := &reads[i]; r.err == nil {
					r.spans = fileSpans(r.data)
					r.kinds.count(r.data)
				}
			}
		})
	}
	wg.Wait()

	var pieces []*piece
	var kinds kindCounts
	for i, name := range files {
		data, err, spans := reads[i].data, reads[i].err, reads[i].spans
		if err != nil {
			// Dropped later if the file is a manifest (reported where it is named).
			p := &piece{file: name, first: true, last: true, problems: []Problem{problemOf(name, err)}, done: make(chan struct{})}
			close(p.done)
			pieces = append(pieces, p)
			continue
		}
		kinds.releases += reads[i].kinds.releases
		kinds.components += reads[i].kinds.components
		kinds.paths += reads[i].kinds.paths
		firstPiece := len(pieces)
		for i := 0; i < len(spans); {
			j, size := i, 0
			for j < len(spans) && (j == i || size < pieceBytes) {
				size += spans[j].end - spans[j].start
				j++
			}
			pieces = append(pieces, &piece{file: name, data: data, spans: spans[i:j], done: make(chan struct{})})
			i = j
		}
		pieces[firstPiece].first, pieces[firstPiece].docs = true, len(spans)
		pieces[len(pieces)-1].last = true
	}
	reads = nil
	l.reserve(kinds, len(files))

	sem := make(chan struct{}, workers)
	next := 0          // the next piece to decode
	var held []Problem // of parsing the file being decoded, added after its last piece
	decodeNext := func() {
		p := pieces[next]
		<-p.done
		if p.panicked != nil {
			panic(p.panicked)
		}
		if p.first && p.docs > 0 {
			l.sn.raw[p.file] = make([]rawDoc, 0, p.docs)
		}
		for _, doc := range p.parsed {
			l.decode(doc)
		}
		if p.arena != nil {
			p.arena.release() // nothing decoding built points into the nodes
		}
		held = append(held, p.problems...)
		if p.last {
			for _, pr := range held {
				if pr.hides {
					l.sn.hidden = append(l.sn.hidden, Source{File: pr.File, Line: pr.Line})
				}
				l.ps.add(pr)
			}
			held = held[:0]
		}
		pieces[next] = nil
		next++
	}
	for i, p := range pieces {
		for i-next >= 2*workers {
			decodeNext()
		}
		if len(p.spans) == 0 {
			continue // a file that could not be read: done already
		}
		// Wait for a free worker, decoding what is ready meanwhile.
		for acquired := false; !acquired; {
			var ready chan struct{}
			if next < i {
				ready = pieces[next].done
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
				p.panicked = recover()
				<-sem
				close(p.done)
			}()
			if l.fast {
				p.arena = arenas.Get().(*nodeArena)
			}
			p.parsed = parseSpans(p.file, p.data, p.spans, p.arena, &p.problems)
		}()
	}
	for next < len(pieces) {
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

// loader holds what decoding the documents of a catalog accumulates.
type loader struct {
	c     *Catalog
	fast  bool // parse on the fast path where it can (fastParse)
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

// decode decodes one document into the catalog. A document whose only
// problems are unknown or repeated fields joins the catalog, so that a
// typo in one document does not also make every reference to it look
// dangling; so does one with wrong-typed values, those left zero, unless
// they are what identifies it (a ComponentVersion's name or version, a
// Release's version or track, an UpgradePath's track): that one is left
// out (noted as broken). The load fails either way.
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
		report(line(n), "apiVersion", "unknown apiVersion "+quote(n.Value), fix)
		return
	}
	d.start(doc.src.File, doc.base)
	if doc.aliases.over != nil {
		d.refuseAliases(doc.aliases)
	}
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
		report(line(find(doc.node, "kind")), "kind", "unknown kind "+quote(env.Kind), "use Release, ComponentVersion or UpgradePath")
		return
	}
	before := d.typeErrs
	d.push("spec")
	// partial reports whether the spec has unusable values but can join
	// the catalog without them: the fields that identify it (ids) are
	// sound, so the checks of references and of the release graph see
	// its other fields; they skip what depends on the unusable ones
	// (specNodes.badField). Such a document is noted in sn.bad.
	partial := func(ids ...string) bool {
		if d.typeErrs == before {
			return true
		}
		if d.overAliases || d.noAliases || len(d.bad) >= maxBadFields || slices.ContainsFunc(ids, func(id string) bool { return relatedField(d.bad, id) }) {
			return false
		}
		l.sn.bad[doc.src] = slices.Clone(d.bad)
		return true
	}
	switch env.Kind {
	case KindRelease:
		r := l.releases.next()
		d.decode(spec, reflect.ValueOf(r).Elem())
		if !partial("spec.version", "spec.track") {
			l.noteBroken(KindRelease, r.Track, r.Version, doc.src)
			l.releases.undo()
			break
		}
		r.Name, r.Source = env.Metadata.Name, doc.src
	case KindComponentVersion:
		cv := l.components.next()
		d.decode(spec, reflect.ValueOf(cv).Elem())
		l.noteManifests(spec)
		if !partial("spec.name", "spec.version") {
			l.noteBroken(KindComponentVersion, cv.Name, cv.Version, doc.src)
			l.components.undo()
			break
		}
		cv.Source = doc.src
		l.checkAttempts(doc, spec, cv)
	case KindUpgradePath:
		p := l.paths.next()
		d.decode(spec, reflect.ValueOf(p).Elem())
		if !partial("spec.track") {
			l.paths.undo()
			break
		}
		p.Name, p.Source = env.Metadata.Name, doc.src
		rules := find(spec, "rules") // once: find scans spec's keys
		for i := range p.Rules {
			p.Rules[i].Source = Source{File: doc.src.File, Line: doc.src.Line}
			if n := find(rules, i); n != nil {
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
				fmt.Sprintf("duplicate %s %s (first at %s)", env.Kind, quote(env.Metadata.Name), first), "give each document its own name")
		} else {
			l.names[k] = doc.src
		}
	}
}

// checkAttempts reports retries.attempts written as 0 in cv's spec: the
// attempts include the first, so 0 is no number of attempts (a
// ComponentVersion built in code leaves Attempts 0 for the executor's
// default, as a spec without attempts does).
func (l *loader) checkAttempts(doc document, spec *yaml.Node, cv *ComponentVersion) {
	if cv.Retries == nil || cv.Retries.Attempts != 0 {
		return
	}
	n := find(spec, "retries", "attempts")
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return // absent, empty or wrong-typed (reported)
	}
	l.ps.add(Problem{File: doc.src.File, Line: doc.base + n.Line, Field: "spec.retries.attempts",
		Message: "attempts must be at least 1, got " + n.Value + " (the attempts include the first)",
		Fix:     "set the total number of attempts, e.g. 3, or remove attempts to use the executor's default"})
}

// unset reports whether a required scalar is missing or empty (a value of
// another shape is reported as a wrong type instead).
func unset(n *yaml.Node) bool { return n == nil || n.Kind == yaml.ScalarNode }

// noteManifests records the files a ComponentVersion's spec names as
// manifests, whether or not the spec decodes.
func (l *loader) noteManifests(spec *yaml.Node) {
	note := func(ms *yaml.Node) {
		if ms == nil || ms.Kind != yaml.SequenceNode {
			return
		}
		for _, m := range ms.Content {
			if f := find(m, "file"); f != nil && f.Kind == yaml.ScalarNode && f.Value != "" {
				l.manifests[path.Clean(f.Value)] = true
			}
		}
	}
	note(find(spec, "manifests"))
	if ps := find(spec, "phases"); ps != nil && ps.Kind == yaml.SequenceNode {
		for _, p := range ps.Content {
			note(find(p, "manifests"))
		}
	}
}

type kindName struct{ kind, name string }

// loadManifests reads each manifest file, of spec.manifests and of each
// lifecycle phase, into its Template. Each file is read once: versions
// that share a file share its text (strings are immutable).
func loadManifests(fsys fs.FS, c *Catalog, sn *specNodes, ps *problems) {
	files := map[string]manifestFile{}
	for i := range c.Components {
		cv := &c.Components[i]
		for j := range cv.Manifests {
			loadManifest(fsys, files, &cv.Manifests[j], "inline-"+strconv.Itoa(j), func(more ...any) Problem {
				return sn.at(cv.Source, append([]any{"manifests", j}, more...)...)
			}, ps)
		}
		for k, p := range cv.Phases {
			for j := range p.Manifests {
				loadManifest(fsys, files, &p.Manifests[j], p.Name+"/inline-"+strconv.Itoa(j), func(more ...any) Problem {
					return sn.at(cv.Source, append([]any{"phases", k, "manifests", j}, more...)...)
				}, ps)
			}
		}
	}
}

// manifestFile is what reading a manifest file gave.
type manifestFile struct {
	data string
	err  error
}

// loadManifest names m (inline, when it has neither name nor file) and
// reads its file into its Template through files; at is m's field.
func loadManifest(fsys fs.FS, files map[string]manifestFile, m *Manifest, inline string, at func(more ...any) Problem, ps *problems) {
	if m.Name == "" {
		m.Name = m.File
		if m.File == "" {
			m.Name = inline
		}
	}
	if m.File == "" {
		return
	}
	if m.Template != "" {
		ps.add(at().with("a manifest needs exactly one of file and template", "remove template to read the file, or remove file to use the inline template"))
		return
	}
	name := path.Clean(m.File)
	f, ok := files[name]
	if !ok {
		data, err := readFile(fsys, name)
		f = manifestFile{string(data), err}
		files[name] = f
	}
	if err := f.err; err != nil {
		msg, fix := fmt.Sprintf("manifest file %s: %v", m.File, err), "write the path relative to the catalog root, or use template for inline YAML"
		var fe *fileError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			msg = fmt.Sprintf("manifest file %s does not exist", m.File)
		case errors.As(err, &fe):
			msg, fix = "manifest file "+m.File+" is "+fe.msg, "a manifest is read from a regular file (or a symbolic link to one): name another file, or use template for inline YAML"
		}
		ps.add(at("file").with(msg, fix))
		return
	}
	m.Template = f.data
}
