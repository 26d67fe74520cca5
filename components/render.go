package components

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/template"

	sprig "github.com/go-task/slim-sprig/v3"
	"go.yaml.in/yaml/v3"

	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// templateData is what manifest and command templates see.
type templateData struct {
	// Component is the version being installed.
	Component componentData
	// From is the version before the hop, "" for a new component.
	From string
	// Hop is "from -> to" of the hop, e.g. "v26.06-rc.2 -> v26.06-rc.3".
	Hop string
	// Values are the caller's values (WithValues, WithExecValues).
	Values map[string]any
}

type componentData struct {
	Name    string
	Version string
	Params  map[string]string
}

func newData(cv *release.ComponentVersion, from, hop string, values map[string]any) templateData {
	return templateData{
		Component: componentData{Name: cv.Name, Version: cv.Version.Original(), Params: cv.Params},
		From:      from,
		Hop:       hop,
		Values:    values,
	}
}

// RenderText renders text, a template named name, as the manifest and exec
// runners render theirs: with t's data (.Component, .From, .Hop) and
// values as .Values, the same function library (funcs), and a missing key
// or a nil value an error. Runners of other modules (kube/helm's values)
// use it so that every template of a catalog means the same.
func RenderText(name, text string, t runner.Task, values map[string]any) (string, error) {
	if t.To == nil {
		return "", noTarget(t)
	}
	return execute(name, text, newData(t.To, fromVersion(t), hopName(t), values))
}

// funcs is the template function library: sprig's, the set Helm users
// know (quote, toYaml, default, required, indent, ...), as
// go-task/slim-sprig keeps it, without env and expandenv, so that a
// catalog's templates cannot read the environment of the process that
// renders them. Two functions Helm adds to sprig are added here too: toYaml
// and required.
//
// slim-sprig leaves out the functions whose result changes on every
// render (uuidv4, randAlphaNum and the other rand functions, genPrivateKey,
// genCA and the other certificate and key generators, bcrypt, htpasswd,
// encryptAES): a plan rendered twice must be the same plan, and prune
// compares what two renders produced. It also leaves out semver and
// semverCompare, merge, mergeOverwrite and deepCopy, the case and wrap
// functions of huandu/xstrings, and the float arithmetic (addf, ...). That
// keeps Masterminds/sprig's twenty dependencies (x/crypto, mergo,
// copystructure, decimal, cast, ...) out of the module graph of every
// program that imports hopdag.
func funcs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["required"] = required
	return f
}

// required is Helm's required: v, or an error with msg when v is nil or
// "".
func required(msg string, v any) (any, error) {
	switch x := v.(type) {
	case nil, *nilValue:
		return nil, errors.New(msg)
	case string:
		if x == "" {
			return nil, errors.New(msg)
		}
	}
	return v, nil
}

// toYAML is Helm's toYaml: v as block YAML without the final newline, ""
// when it cannot be encoded.
func toYAML(v any) string {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// parseTemplate parses text as a template that refuses missing map keys.
func parseTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs()).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return t, nil
}

// execute parses and executes one template. A nil value that reaches the
// output is an error, as a missing one is (text/template would print
// "<no value>"): values are executed with every nil replaced by a marker
// whose text cannot occur otherwise, and the output is checked for it.
// The marker is a nil pointer, so that sprig's default and empty still see
// it as empty.
func execute(name, text string, data templateData) (string, error) {
	t, err := parseTemplate(name, text)
	if err != nil {
		return "", err
	}
	var nils []string
	if data.Values != nil {
		data.Values = markNils(data.Values, ".Values", &nils).(map[string]any)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	out := b.String()
	if strings.Contains(out, nilText) {
		return "", fmt.Errorf("%w: template: %s: a nil value is rendered (null in YAML, nil in Go; nil values: %s); set it, or give a default with `| default`", ErrTemplate, name, strings.Join(nils, ", "))
	}
	return out, nil
}

// nilValue marks a nil value; see execute.
type nilValue struct{}

// nilText is what a *nilValue prints as.
const nilText = "\x00hopdag:nil\x00"

// String is nilText, also for a nil *nilValue.
func (*nilValue) String() string { return nilText }

// markNils returns v with every nil in maps and slices replaced by a nil
// *nilValue, copying what it changes, and appends the paths of the nils to
// paths (sorted within a map).
func markNils(v any, path string, paths *[]string) any {
	switch v := v.(type) {
	case nil:
		*paths = append(*paths, path)
		return (*nilValue)(nil)
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out[k] = markNils(v[k], path+"."+k, paths)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = markNils(e, fmt.Sprintf("%s[%d]", path, i), paths)
		}
		return out
	}
	return v
}

// manifestName is how a manifest is named in objects and messages: its
// name, its file, or "inline-N" as release.Load names inline manifests.
func manifestName(m release.Manifest, i int) string {
	switch {
	case m.Name != "":
		return m.Name
	case m.File != "":
		return m.File
	}
	return fmt.Sprintf("inline-%d", i)
}

func emptyTemplate(name string) error {
	return fmt.Errorf("%w: manifest %s has no template text (release.Load reads manifest files into Template; a ComponentVersion built in code must set it)", ErrTemplate, name)
}

// scoping is how renderObjects defaults namespaces: ns for namespaced
// objects that set none; extra names more cluster-scoped kinds.
type scoping struct {
	ns    string
	extra map[string]bool
}

// renderObjects renders every manifest of ms (cv's) with data, defaults the
// namespaces of its objects, and returns them in apply order. It reports
// every template and document problem at once, and an object rendered
// twice (identity after defaulting).
func renderObjects(cv *release.ComponentVersion, ms []release.Manifest, data templateData, sc scoping) ([]Object, error) {
	if len(ms) == 0 {
		return nil, ErrNoManifests
	}
	var (
		docs []document
		errs []error
	)
	for i, m := range ms {
		name := manifestName(m, i)
		if m.Template == "" {
			errs = append(errs, emptyTemplate(name))
			continue
		}
		text, err := execute(name, m.Template, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ds, derrs := decodeDocuments(name, text)
		errs = append(errs, derrs...)
		for _, d := range ds {
			d.obj.Component, d.obj.Version = cv.Name, cv.Version.Original()
			docs = append(docs, d)
		}
	}
	errs = append(errs, defaultNamespaces(docs, sc.ns, sc.extra)...)
	seen := map[objectKey]Object{}
	var unique []Object
	for _, d := range docs {
		o := d.obj
		if first, dup := seen[o.key()]; dup {
			errs = append(errs, &DocumentError{Manifest: o.Manifest, Doc: o.Doc, Line: d.line,
				Err: fmt.Errorf("%s is rendered twice (also %s document %d)", o, first.Manifest, first.Doc)})
			continue
		}
		seen[o.key()] = o
		unique = append(unique, o)
	}
	if err := join(errs); err != nil {
		return nil, err
	}
	sortObjects(unique)
	return unique, nil
}

// sortObjects puts Namespaces first, then CustomResourceDefinitions, then
// the rest, each group in declared order.
func sortObjects(objs []Object) {
	rank := func(o Object) int {
		switch o.Kind {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(objs, func(a, b Object) int { return cmp.Compare(rank(a), rank(b)) })
}

// document is a decoded object and the line it starts on.
type document struct {
	obj  Object
	line int
}

// chunk is the text between two "---" lines and the line it starts on.
type chunk struct {
	text string
	line int
}

// splitDocuments cuts a rendered manifest at its document separators: lines
// that start with "---" followed by nothing but blanks or a comment (the
// rule of Kubernetes' YAML reader). A line inside a block scalar is indented,
// so it is never taken for a separator.
func splitDocuments(text string) []chunk {
	var (
		chunks []chunk
		b      strings.Builder
		start  = 1
		line   = 0
	)
	for l := range strings.Lines(text) {
		line++
		if isSeparator(l) {
			chunks = append(chunks, chunk{b.String(), start})
			b.Reset()
			start = line + 1
			continue
		}
		b.WriteString(l)
	}
	return append(chunks, chunk{b.String(), start})
}

func isSeparator(line string) bool {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "---")
	if !ok {
		return false
	}
	rest = strings.TrimSpace(rest)
	return rest == "" || rest[0] == '#'
}

// decodeDocuments splits and decodes a rendered manifest. Empty documents
// (blank, comments only, or null) are left out and not counted. It returns
// the objects, and an error per document that is not a Kubernetes object.
func decodeDocuments(manifest, text string) ([]document, []error) {
	var (
		docs []document
		errs []error
		n    int
	)
	for _, c := range splitDocuments(text) {
		node, err := decodeChunk(c)
		if node == nil && err == nil {
			continue
		}
		n++
		fail := func(line int, err error) {
			errs = append(errs, &DocumentError{Manifest: manifest, Doc: n, Line: line, Err: err})
		}
		if err != nil {
			fail(c.line, err)
			continue
		}
		top := node.Content[0]
		o, err := toObject(top)
		if err != nil {
			fail(top.Line, err)
			continue
		}
		o.Manifest, o.Doc, o.YAML = manifest, n, trimBlankLines(c.text)
		docs = append(docs, document{o, top.Line})
	}
	return docs, errs
}

// decodeChunk decodes one document; it returns nil and no error for an
// empty one (blank, comments only, or null). Line numbers, in the nodes and
// in errors, are those of the whole rendered manifest.
func decodeChunk(c chunk) (*yaml.Node, error) {
	node, err := decodeOne(c.text)
	if err != nil && c.line > 1 {
		// Decoding again behind as many blank lines as precede the chunk
		// gives the syntax error the manifest's line number. Doing so only
		// for errors keeps a manifest of many documents linear.
		_, err = decodeOne(strings.Repeat("\n", c.line-1) + c.text)
	}
	if node != nil {
		shiftLines(node, c.line-1)
	}
	return node, err
}

// decodeOne decodes the single document of text.
func decodeOne(text string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var node yaml.Node
	if err := dec.Decode(&node); errors.Is(err, io.EOF) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if isEmpty(&node) {
		return nil, nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("holds more than one document; put each on its own after a line with only ---")
	}
	return &node, nil
}

// shiftLines adds by to the line of n and of every node under it.
func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// isEmpty reports whether a decoded document holds nothing, or null.
func isEmpty(n *yaml.Node) bool {
	if n.Kind == 0 || (n.Kind == yaml.DocumentNode && len(n.Content) == 0) {
		return true
	}
	top := n.Content[0]
	return top.Kind == yaml.ScalarNode && top.Tag == "!!null"
}

// toObject checks that a document is a Kubernetes object and decodes it.
func toObject(top *yaml.Node) (Object, error) {
	if top.Kind != yaml.MappingNode {
		return Object{}, fmt.Errorf("not an object: the document is %s, want a mapping with apiVersion, kind and metadata.name", kindName(top))
	}
	var content map[string]any
	if err := top.Decode(&content); err != nil {
		return Object{}, err
	}
	var missing, wrong []string
	field := func(m map[string]any, key, path string) string {
		switch v := m[key].(type) {
		case nil:
			missing = append(missing, path)
		case string:
			if v == "" {
				missing = append(missing, path)
			}
			return v
		default:
			wrong = append(wrong, fmt.Sprintf("%s must be a string, not %T", path, v))
		}
		return ""
	}
	o := Object{Content: content}
	o.APIVersion = field(content, "apiVersion", "apiVersion")
	o.Kind = field(content, "kind", "kind")
	switch md := content["metadata"].(type) {
	case map[string]any:
		o.Name = field(md, "name", "metadata.name")
		if ns, ok := md["namespace"]; ok && ns != nil {
			if s, ok := ns.(string); ok {
				o.Namespace = s
			} else {
				wrong = append(wrong, fmt.Sprintf("metadata.namespace must be a string, not %T", ns))
			}
		}
	case nil:
		missing = append(missing, "metadata.name")
	default:
		wrong = append(wrong, fmt.Sprintf("metadata must be a mapping, not %T", md))
	}
	var msgs []string
	if len(missing) > 0 {
		msgs = append(msgs, "missing "+strings.Join(missing, ", "))
	}
	msgs = append(msgs, wrong...)
	if len(msgs) > 0 {
		return Object{}, errors.New(strings.Join(msgs, "; "))
	}
	return o, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		return "a scalar (" + strings.TrimPrefix(n.Tag, "!!") + ")"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a node"
}

// trimBlankLines drops blank lines at both ends and ends the text with a
// newline.
func trimBlankLines(s string) string {
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n") + "\n"
}
