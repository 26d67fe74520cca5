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
	"strconv"
	"strings"

	"github.com/hopdag/hopdag/release/internal/yamldoc"
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

// load is Load, with the fast path of parsing (see yamldoc.Parser) or
// without it.
func load(fsys fs.FS, fast bool) (*Catalog, error) { return newLoader(fast).load(fsys) }

func newLoader(fast bool) *loader {
	l := &loader{c: &Catalog{}, sn: newSpecNodes(), ps: &problems{}, fast: fast,
		broken: map[brokenKey]Source{}, manifests: map[string]bool{}}
	l.dec = yamldoc.NewDecoder(l.ps, decodeOptions)
	return l
}

// decodeOptions are what the decoder knows of the catalog's types: the
// scalar ones decode from a value's text without copying it, and name
// themselves in a problem of a value of another shape.
var decodeOptions = yamldoc.Options{
	Scalars: []yamldoc.Scalar{
		{Type: reflect.TypeFor[Version](), Word: "a version such as v26.06", Parse: func(s string, v reflect.Value) error {
			ver, err := ParseVersion(s)
			*v.Addr().Interface().(*Version) = ver // no boxing of the value
			return err
		}},
		{Type: reflect.TypeFor[Constraint](), Word: "a version or range such as \">= v26.06, < v26.09\"", Parse: func(s string, v reflect.Value) error {
			c, err := ParseConstraint(s)
			*v.Addr().Interface().(*Constraint) = c
			return err
		}},
		{Type: reflect.TypeFor[Duration](), Word: "a duration such as 90s", Parse: func(s string, v reflect.Value) error {
			d, err := ParseDuration(s)
			*v.Addr().Interface().(*Duration) = d
			return err
		}},
	},
	ErrPrefix:  "release: ",
	MappingFix: mappingFix,
}

// mappingFix is the fix of a value of struct type t written as n, which
// is not a mapping: what a mapping of t looks like, where a short form
// is a common mistake (retries: 3).
func mappingFix(t reflect.Type, n *yaml.Node) string {
	if t != reflect.TypeFor[Retries]() {
		return ""
	}
	if yamldoc.IsInt(n) {
		return fmt.Sprintf("write retries: {attempts: %s}", n.Value)
	}
	return "write retries: {attempts: 3, backoff: 10s}"
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
	l.c.Releases, l.c.Components, l.c.Paths = l.releases.All(), l.components.All(), l.paths.All()
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
	l.ps.Drop(l.manifests)
	l.releases.Filter(func(r *Release) bool { return !l.manifests[r.Source.File] })
	l.components.Filter(func(cv *ComponentVersion) bool { return !l.manifests[cv.Source.File] })
	l.paths.Filter(func(p *UpgradePath) bool { return !l.manifests[p.Source.File] })
	for k, src := range l.broken {
		if l.manifests[src.File] {
			delete(l.broken, k)
		}
	}
}

// pieceBytes is about how much text one piece of a file holds (see
// yamldoc.Parser.PieceBytes; a variable for TestLoadPieces, which checks
// that cutting changes nothing).
var pieceBytes = 256 << 10

// parseAndDecode reads the files, in order, on this goroutine (an fs.FS
// need not be safe for concurrent use), then has yamldoc parse them
// concurrently and decodes their documents in order (yamldoc.Parser.Parse),
// so the result does not depend on scheduling.
//
// All files are read first (their text is kept until Load returns
// anyway, for the lines of problems found after decoding), so that the
// number of documents of each kind can be estimated from the text and the
// catalog's slices and maps sized once.
func (l *loader) parseAndDecode(fsys fs.FS, files []string) {
	in := make([]yamldoc.File, len(files))
	for i, name := range files {
		data, err := readFile(fsys, name)
		in[i] = yamldoc.File{Name: name, Data: data}
		if err != nil {
			// Dropped later if the file is a manifest (reported where it is named).
			pr := problemOf(name, err)
			in[i].Problems = []yamldoc.Problem{{File: pr.File, Line: pr.Line, Message: pr.Message, Fix: pr.Fix}}
		}
	}
	kinds := make([]kindCounts, len(files))
	p := yamldoc.Parser{
		Slow:       !l.fast,
		PieceBytes: pieceBytes,
		Lines:      l.sn.lines,
		Scan:       func(i int, data []byte) { kinds[i].count(data) },
		Ready: func() {
			var sum kindCounts
			for _, k := range kinds {
				sum.releases, sum.components, sum.paths = sum.releases+k.releases, sum.components+k.components, sum.paths+k.paths
			}
			l.reserve(sum)
		},
		Decode: l.decode,
		Done: func(_ string, problems []yamldoc.Problem) {
			for _, pr := range problems {
				if pr.Hides {
					l.sn.hidden = append(l.sn.hidden, Source{File: pr.File, Line: pr.Line})
				}
				l.ps.Report(pr)
			}
		},
	}
	p.Parse(in)
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

// reserve sizes what decoding fills for the documents kinds counts.
func (l *loader) reserve(kinds kindCounts) {
	l.releases.Reserve(kinds.releases)
	l.components.Reserve(kinds.components)
	l.paths.Reserve(kinds.paths)
	l.names = make(map[kindName]Source, kinds.releases+kinds.components+kinds.paths)
}

// loader holds what decoding the documents of a catalog accumulates.
type loader struct {
	c     *Catalog
	fast  bool // parse on the fast path where it can
	sn    *specNodes
	ps    *problems
	dec   *yamldoc.Decoder
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
	releases   yamldoc.Chunked[Release]
	components yamldoc.Chunked[ComponentVersion]
	paths      yamldoc.Chunked[UpgradePath]
}

// noteBroken records a document that did not decode under the track or
// component name and version it declares, when those could be read.
func (l *loader) noteBroken(kind, name string, v Version, src Source) {
	if !v.IsZero() {
		l.broken[brokenKey{kind, name, v.Canonical()}] = src
	}
}

// report reports a problem of doc.
func (l *loader) report(doc yamldoc.Document, line int, field, msg, fix string) {
	l.ps.add(Problem{File: doc.File, Line: line, Field: field, Message: msg, Fix: fix})
}

// decode decodes one document into the catalog. A document whose only
// problems are unknown or repeated fields joins the catalog, so that a
// typo in one document does not also make every reference to it look
// dangling; so does one with wrong-typed values, those left zero, unless
// they are what identifies it (a ComponentVersion's name or version, a
// Release's version or track, an UpgradePath's track): that one is left
// out (noted as broken). The load fails either way.
func (l *loader) decode(doc yamldoc.Document) {
	env, ok := l.envelope(doc)
	if !ok {
		return
	}
	src := Source{File: doc.File, Line: doc.Line}
	before := l.dec.TypeErrs()
	l.dec.Push("spec")
	switch env.Kind {
	case KindRelease:
		l.decodeRelease(doc, src, env, before)
	case KindComponentVersion:
		l.decodeComponent(doc, src, env, before)
	case KindUpgradePath:
		l.decodePath(doc, src, env, before)
	}
	l.dec.Pop()
	if env.Metadata.Name != "" {
		k := kindName{env.Kind, env.Metadata.Name}
		if first, dup := l.names[k]; dup {
			l.report(doc, doc.Base+yamldoc.Find(doc.Node, "metadata", "name").Line, "metadata.name",
				fmt.Sprintf("duplicate %s %s (first at %s)", env.Kind, quote(env.Metadata.Name), first), "give each document its own name")
		} else {
			l.names[k] = src
		}
	}
}

// envelope checks and decodes the apiVersion, kind and metadata of doc
// into l.env, and reports whether its spec is to be decoded: a document
// of a known kind, with a spec.
func (l *loader) envelope(doc yamldoc.Document) (*envelope, bool) {
	line := func(n *yaml.Node) int { return doc.Base + n.Line }
	if doc.Node.Kind != yaml.MappingNode {
		l.report(doc, doc.Line, "", fmt.Sprintf("a catalog document must be a mapping, got %s", yamldoc.KindWord(doc.Node)),
			"start it with apiVersion: "+APIVersion+" and kind: Release, ComponentVersion or UpgradePath")
		return nil, false
	}
	// Another apiVersion is another schema: say so, and nothing about its
	// fields. A Kubernetes manifest that no ComponentVersion names lands here.
	if n := yamldoc.Find(doc.Node, "apiVersion"); n != nil && n.Kind == yaml.ScalarNode && n.Value != "" && n.Value != APIVersion {
		fix := "use apiVersion: " + APIVersion
		if !strings.HasPrefix(n.Value, "hopdag.io/") {
			fix = "catalog documents have apiVersion: " + APIVersion + "; if this file is a manifest, name it in a ComponentVersion's spec.manifests[].file"
		}
		l.report(doc, line(n), "apiVersion", "unknown apiVersion "+quote(n.Value), fix)
		return nil, false
	}
	l.dec.Start(doc)
	l.env = envelope{}
	env := &l.env
	l.dec.Decode(doc.Node, env)
	if env.APIVersion == "" && unset(yamldoc.Find(doc.Node, "apiVersion")) {
		l.report(doc, doc.Line, "apiVersion", "missing apiVersion", "add apiVersion: "+APIVersion)
		return nil, false
	}
	if md := yamldoc.Find(doc.Node, "metadata"); env.Metadata.Name == "" && (md == nil || md.Kind == yaml.MappingNode) && unset(yamldoc.Find(md, "name")) {
		l.report(doc, doc.Line, "metadata.name", "missing metadata.name", "name the document, e.g. metadata: {name: etcd-v3.5.21}")
	}
	switch env.Kind {
	case KindRelease, KindComponentVersion, KindUpgradePath:
		if env.Spec == nil {
			l.report(doc, doc.Line, "spec", "missing spec", "add the "+env.Kind+" spec")
			return nil, false
		}
		return env, true
	case "":
		if unset(yamldoc.Find(doc.Node, "kind")) {
			l.report(doc, doc.Line, "kind", "missing kind", "add kind: Release, ComponentVersion or UpgradePath")
		}
	default:
		l.report(doc, line(yamldoc.Find(doc.Node, "kind")), "kind", "unknown kind "+quote(env.Kind), "use Release, ComponentVersion or UpgradePath")
	}
	return nil, false
}

// partial reports whether the spec of the document at src, decoded since
// the decoder counted before type errors, has unusable values but can join
// the catalog without them: the fields that identify it (ids) are sound,
// so the checks of references and of the release graph see its other
// fields; they skip what depends on the unusable ones
// (specNodes.badField). Such a document is noted in sn.bad.
func (l *loader) partial(src Source, before int, ids ...string) bool {
	bad, ok := l.dec.Partial(before, ids...)
	if ok && bad != nil {
		l.sn.bad[src] = bad
	}
	return ok
}

func (l *loader) decodeRelease(doc yamldoc.Document, src Source, env *envelope, before int) {
	r := l.releases.Next()
	l.dec.Decode(env.Spec, r)
	if !l.partial(src, before, "spec.version", "spec.track") {
		l.noteBroken(KindRelease, r.Track, r.Version, src)
		l.releases.Undo()
		return
	}
	r.Name, r.Source = env.Metadata.Name, src
}

func (l *loader) decodeComponent(doc yamldoc.Document, src Source, env *envelope, before int) {
	cv := l.components.Next()
	l.dec.Decode(env.Spec, cv)
	l.noteManifests(env.Spec)
	if !l.partial(src, before, "spec.name", "spec.version") {
		l.noteBroken(KindComponentVersion, cv.Name, cv.Version, src)
		l.components.Undo()
		return
	}
	cv.Source = src
	l.checkAttempts(doc, env.Spec, cv)
}

func (l *loader) decodePath(doc yamldoc.Document, src Source, env *envelope, before int) {
	p := l.paths.Next()
	l.dec.Decode(env.Spec, p)
	if !l.partial(src, before, "spec.track") {
		l.paths.Undo()
		return
	}
	p.Name, p.Source = env.Metadata.Name, src
	rules := yamldoc.Find(env.Spec, "rules") // once: Find scans spec's keys
	for i := range p.Rules {
		p.Rules[i].Source = src
		if n := yamldoc.Find(rules, i); n != nil {
			p.Rules[i].Source.Line = doc.Base + n.Line
		}
	}
}

// checkAttempts reports retries.attempts written as 0 in cv's spec: the
// attempts include the first, so 0 is no number of attempts (a
// ComponentVersion built in code leaves Attempts 0 for the executor's
// default, as a spec without attempts does).
func (l *loader) checkAttempts(doc yamldoc.Document, spec *yaml.Node, cv *ComponentVersion) {
	if cv.Retries == nil || cv.Retries.Attempts != 0 {
		return
	}
	n := yamldoc.Find(spec, "retries", "attempts")
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return // absent, empty or wrong-typed (reported)
	}
	l.ps.add(Problem{File: doc.File, Line: doc.Base + n.Line, Field: "spec.retries.attempts",
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
			if f := yamldoc.Find(m, "file"); f != nil && f.Kind == yaml.ScalarNode && f.Value != "" {
				l.manifests[path.Clean(f.Value)] = true
			}
		}
	}
	note(yamldoc.Find(spec, "manifests"))
	if ps := yamldoc.Find(spec, "phases"); ps != nil && ps.Kind == yaml.SequenceNode {
		for _, p := range ps.Content {
			note(yamldoc.Find(p, "manifests"))
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

// problems collects the problems of one Load: at most 100 per file and
// 1,000 in all are listed, the rest counted (yamldoc.Problems).
type problems struct{ yamldoc.Problems }

// add lists p.
func (ps *problems) add(p Problem) {
	ps.Report(yamldoc.Problem{File: p.File, Line: p.Line, Field: p.Field, Message: p.Message, Fix: p.Fix})
}

// err sorts and deduplicates the problems, adds the "and N more" ones, and
// returns a *LoadError, or nil.
func (ps *problems) err() error {
	list, omitted := ps.Sorted()
	if list == nil {
		return nil
	}
	return &LoadError{Problems: problemsOf(list), Omitted: omitted}
}

// sorted returns the problems, sorted as err sorts them, or nil: the
// warnings of a catalog that loaded.
func (ps *problems) sorted() []Problem {
	list, _ := ps.Sorted()
	return problemsOf(list)
}

// problemsOf converts the problems yamldoc collected (nil for none).
func problemsOf(list []yamldoc.Problem) []Problem {
	if list == nil {
		return nil
	}
	out := make([]Problem, len(list))
	for i, p := range list {
		out[i] = Problem{File: p.File, Line: p.Line, Field: p.Field, Message: p.Message, Fix: p.Fix, omits: p.Omits}
	}
	return out
}
