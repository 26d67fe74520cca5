package yamldoc

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Strict decoding. yaml.v3's own decoding (Node.Decode, Decoder.Decode into
// a struct) stops at the first type error of a document, reports unknown
// fields without their path, and checks mapping keys for duplicates by
// comparing every pair: a mapping of n keys costs n^2 (a 2 MB params map
// took seconds, 50 MB hours). The decoder below never calls it: it fills Go
// values straight from the yaml.Node tree of a document, in one walk that
// is linear in the tree (plus at most maxAliasNodes values reached through
// aliases), and reports every unknown field, repeated key and wrong type
// with its path and line. A problem in one field never stops the others
// from being decoded and checked.

// Limits on hostile input. None is reached by a realistic catalog; each
// problem names the limit.
const (
	// maxAliasNodes bounds the values one document may decode through
	// aliases, so that aliases to lists of aliases cannot multiply the work
	// (a "billion laughs" document).
	maxAliasNodes = 10_000
	// maxBadFields bounds the unusable values whose paths one document
	// keeps (decoder.bad); a document with more is left out whole.
	maxBadFields = 1000
)

// Decoder decodes the documents of one load into Go values: structs (their
// fields named by yaml tags, ",inline" embedded structs), pointers, maps
// with string keys, slices, strings, booleans, integers, and, from a
// scalar, the types of its Options.Scalars that have a Parse and the
// struct types whose pointer is an encoding.TextUnmarshaler. A field of type *yaml.Node
// gets the node, for the caller to decode. Its zero value is not ready:
// use NewDecoder. It is reused from document to document (Start resets
// it) so that decoding allocates only the values it builds.
type Decoder struct {
	opts  Options
	infos []*structInfo // the few struct types: a slice beats a map keyed by reflect.Type
	// Per document.
	file string
	base int // added to node lines: the line before the document's part of the file
	r    Reporter
	// path is the field path of the value being decoded, rendered only when
	// a problem is reported.
	path []pathElem
	// typeErrs counts problems that leave a value unusable (wrong type,
	// invalid version); loose counts unknown and repeated fields, after
	// which the document still decodes.
	typeErrs, loose int
	// bad holds the field path of each unusable value (typeErrs of them),
	// left zero in what decoding built: checks of the partly decoded
	// document skip what depends on them (Partial).
	bad []string
	// Aliases: aliasDepth > 0 while decoding through an alias; aliasNodes
	// counts the values decoded so; via is the outermost alias being
	// followed (nil outside one), whose line the problems found through it
	// are reported at: their field path is the alias's. seen holds the
	// anchored nodes already decoded once, with the type they were decoded
	// into: a node decoded again into the same type has the same problems,
	// reported the first time, and mute > 0 while it is decoded again. A
	// node decoded into another type (a label's string as a constraint)
	// has problems of its own, reported.
	aliasDepth, aliasNodes, mute int
	via                          *yaml.Node
	seen                         map[seenKey]bool
	overAliases                  bool
	// noAliases is set for a document whose aliases bring in more than
	// maxAliasBytes (refuseAliases): its aliases are not followed.
	noAliases bool
	merging   []*yaml.Node // the mappings whose merge keys are being followed
}

// seenKey is an anchored node and a type it was decoded into.
type seenKey struct {
	n *yaml.Node
	t reflect.Type
}

type pathElem struct {
	key   string
	index int // used when key == "" (a list index)
}

// Options are what a Decoder knows of the caller's types.
type Options struct {
	// Scalars decode the values of their types from a scalar's text.
	Scalars []Scalar
	// ErrPrefix is cut from the errors of Scalar.Parse and UnmarshalText
	// (a package's "name: "), which a problem follows a field path with.
	ErrPrefix string
	// MappingFix, if set, gives the fix of a value of struct type t
	// written as n, which is not a mapping: what a mapping of t looks
	// like, where a short form is a common mistake ("" for none).
	MappingFix func(t reflect.Type, n *yaml.Node) string
}

// Scalar is a type whose values are written as one scalar.
type Scalar struct {
	Type reflect.Type
	// Word names the type in a problem: "want a single value (Word), got
	// a mapping".
	Word string
	// Parse, if set, sets v (addressable, of Type) from s, the scalar's
	// text, and returns what makes it unusable: it can keep s, where
	// UnmarshalText gets a copy. Without Parse, Type must be a struct
	// type whose pointer is an encoding.TextUnmarshaler.
	Parse func(s string, v reflect.Value) error
}

// NewDecoder returns a Decoder that reports problems to r.
func NewDecoder(r Reporter, opts Options) *Decoder {
	return &Decoder{seen: map[seenKey]bool{}, r: r, opts: opts}
}

// Start prepares d for doc. When the aliases of doc bring in more than
// the limit of bytes, Start reports it and d follows none of them: the
// document is not Partial.
func (d *Decoder) Start(doc Document) {
	d.start(doc.File, doc.Base)
	if doc.aliases.over != nil {
		d.refuseAliases(doc.aliases)
	}
}

// TypeErrs counts the problems since Start that left a value unusable
// (wrong type, invalid value, refused aliases).
func (d *Decoder) TypeErrs() int { return d.typeErrs }

// Partial reports whether the value decoded since the count of TypeErrs
// was before can be used without its unusable values (those left zero):
// none of them is one of ids (field paths) or related to one
// (RelatedField), there are fewer than 1,000, and no alias limit was
// reached. bad lists the paths of the unusable values (a copy; nil when
// there are none).
func (d *Decoder) Partial(before int, ids ...string) (bad []string, ok bool) {
	if d.typeErrs == before {
		return nil, true
	}
	if d.overAliases || d.noAliases || len(d.bad) >= maxBadFields || slices.ContainsFunc(ids, func(id string) bool { return RelatedField(d.bad, id) }) {
		return nil, false
	}
	return slices.Clone(d.bad), true
}

// start prepares d for one document of file whose node lines are offset by
// base.
func (d *Decoder) start(file string, base int) {
	d.file, d.base = file, base
	d.path = d.path[:0]
	d.typeErrs, d.loose = 0, 0
	d.bad = d.bad[:0]
	d.aliasDepth, d.aliasNodes, d.mute = 0, 0, 0
	d.via = nil
	d.overAliases, d.noAliases = false, false
	d.merging = d.merging[:0]
	clear(d.seen)
}

// Push enters the field key: problems name the fields they are in.
func (d *Decoder) Push(key string) { d.path = append(d.path, pathElem{key: key}) }

// Pop leaves the field Push entered last.
func (d *Decoder) Pop() { d.path = d.path[:len(d.path)-1] }

func (d *Decoder) pushIndex(i int) { d.path = append(d.path, pathElem{index: i}) }

// field renders the current path, e.g. "spec.components[2].version".
func (d *Decoder) field() string {
	var b strings.Builder
	for _, e := range d.path {
		if e.key == "" {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(Clip(e.key))
	}
	return b.String()
}

// typeErr reports a problem that makes the value unusable; msg is built
// only when the problem is shown.
func (d *Decoder) typeErr(n *yaml.Node, msg func() string, fix string) {
	d.typeErrs++
	if len(d.bad) < maxBadFields {
		d.bad = append(d.bad, d.field())
	}
	d.emit(n, msg, func() string { return fix })
}

// looseErr reports an unknown or repeated field.
func (d *Decoder) looseErr(n *yaml.Node, msg func() string, fix func() string) {
	d.loose++
	d.emit(n, msg, fix)
}

// emit reports a problem of n, unless muted: at n's line, or, decoding
// through an alias, at the alias's line, saying where its anchor is.
func (d *Decoder) emit(n *yaml.Node, msg func() string, fix func() string) {
	if d.mute > 0 {
		return
	}
	line := d.base + n.Line
	if d.via != nil {
		line = d.base + d.via.Line
	}
	if !d.r.Room(d.file, line) {
		return
	}
	m := msg()
	if a := d.via; a != nil {
		m += fmt.Sprintf(" (the value of alias *%s, anchored at line %d)", a.Value, d.base+a.Alias.Line)
	}
	d.r.Report(Problem{File: d.file, Line: line, Field: d.field(), Message: m, Fix: fix()})
}

// structInfo is what the decoder needs of a struct type: its YAML keys.
type structInfo struct {
	t      reflect.Type
	index  map[string]int // YAML key -> slot in fields (a bit of the "set" mask)
	fields [][]int        // slot -> field index path, through ",inline" embedded structs
	names  []string       // sorted YAML keys, for "known fields"
	text   bool           // *T is an encoding.TextUnmarshaler: decoded from a scalar
}

func (d *Decoder) structInfo(t reflect.Type) *structInfo {
	for _, si := range d.infos {
		if si.t == t {
			return si
		}
	}
	si := &structInfo{t: t, index: map[string]int{}, text: reflect.PointerTo(t).Implements(textUnmarshaler)}
	si.add(t, nil)
	if len(si.fields) > 64 {
		panic("yamldoc: internal error: " + t.String() + " has more than 64 YAML keys")
	}
	slices.Sort(si.names)
	d.infos = append(d.infos, si)
	return si
}

// add records the YAML keys of struct type t, whose fields are at path
// prefix in si.t: an embedded struct tagged ",inline" gives its keys to the
// outer struct, as yaml.v3 and encoding/json read it.
func (si *structInfo) add(t reflect.Type, prefix []int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		path := append(slices.Clip(prefix), i)
		if f.Anonymous && opts == "inline" && f.Type.Kind() == reflect.Struct {
			si.add(f.Type, path)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		si.index[name] = len(si.fields)
		si.fields = append(si.fields, path)
		si.names = append(si.names, name)
	}
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	nodePtrType     = reflect.TypeFor[*yaml.Node]()
)

// Decode fills the value ptr points to from n.
func (d *Decoder) Decode(n *yaml.Node, ptr any) { d.decode(n, reflect.ValueOf(ptr).Elem()) }

// decode fills v (addressable) from n.
func (d *Decoder) decode(n *yaml.Node, v reflect.Value) {
	if d.overAliases {
		return
	}
	if n.Kind == yaml.AliasNode {
		d.alias(n, v)
		return
	}
	if v.Type() == nodePtrType {
		v.Set(reflect.ValueOf(n)) // decoded later, by the caller
		return
	}
	if d.aliasDepth > 0 && !d.countAlias(n) {
		return
	}
	if n.Anchor != "" {
		k := seenKey{n, v.Type()}
		if d.seen[k] {
			d.mute++
			defer func() { d.mute-- }()
		} else {
			d.seen[k] = true
		}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value decodes to the zero value
	}
	d.value(n, v)
}

// value fills v from n, which is neither an alias nor null.
func (d *Decoder) value(n *yaml.Node, v reflect.Value) {
	t := v.Type()
	for i := range d.opts.Scalars {
		if sc := &d.opts.Scalars[i]; sc.Type == t && sc.Parse != nil {
			if s, ok := d.scalar(n, t); ok {
				d.setParsed(n, sc.Parse(s, v))
			}
			return
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		d.value(n, p.Elem())
		v.Set(p)
	case reflect.Struct:
		d.structValue(n, v)
	case reflect.Map:
		d.mapValue(n, v)
	case reflect.Slice:
		d.sliceValue(n, v)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.typeErr(n, func() string { return "want a string, got " + KindWord(n) }, "")
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := parseBool(n)
		if !ok {
			d.typeErr(n, func() string { return "want true or false, got " + KindWord(n) }, "")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := parseInt(n, t.Bits())
		if err != nil {
			d.typeErr(n, func() string { return "want a whole number, got " + KindWord(n) }, "")
			return
		}
		v.SetInt(i)
	default:
		panic("yamldoc: internal error: cannot decode YAML into " + t.String())
	}
}

// str decodes a string value, as decode does into a string.
func (d *Decoder) str(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Anchor == "" && d.aliasDepth == 0 {
		if n.Tag == "!!null" {
			return ""
		}
		return n.Value
	}
	var s string
	d.decode(n, reflect.ValueOf(&s).Elem())
	return s
}

// scalar returns the text of a scalar node for a value of type t.
func (d *Decoder) scalar(n *yaml.Node, t reflect.Type) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.typeErr(n, func() string { return fmt.Sprintf("want a single value (%s), got %s", d.typeWord(t), KindWord(n)) }, "")
		return "", false
	}
	return n.Value, true
}

// setParsed reports err, the error of parsing a scalar, if any.
func (d *Decoder) setParsed(n *yaml.Node, err error) {
	if err != nil {
		d.typeErr(n, func() string { return strings.TrimPrefix(err.Error(), d.opts.ErrPrefix) }, "")
	}
}

// parseBool accepts what YAML 1.2 resolves to a boolean.
func parseBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, false
	}
	switch n.Value {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	return false, false
}

// IsInt reports whether n is a scalar that YAML resolves to an integer
// which fits in 64 bits.
func IsInt(n *yaml.Node) bool {
	_, err := parseInt(n, 64)
	return err == nil
}

// parseInt accepts what YAML resolves to an integer (0x, 0o, 0b, _).
func parseInt(n *yaml.Node, bits int) (int64, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, strconv.ErrSyntax
	}
	s := n.Value
	if strings.Contains(s, "_") {
		s = strings.ReplaceAll(s, "_", "")
	}
	if rest, ok := strings.CutPrefix(s, "0o"); ok {
		s = "0" + rest
	}
	return strconv.ParseInt(s, 0, bits)
}

func (d *Decoder) structValue(n *yaml.Node, v reflect.Value) {
	si := d.structInfo(v.Type())
	if si.text {
		if s, ok := d.scalar(n, v.Type()); ok {
			d.setParsed(n, v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)))
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		fix := ""
		if d.opts.MappingFix != nil {
			fix = d.opts.MappingFix(v.Type(), n)
		}
		d.typeErr(n, func() string { return "want a mapping, got " + KindWord(n) }, fix)
		return
	}
	var set uint64
	merges := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; isMerge(k) {
			merges = true
		} else {
			d.structField(si, v, &set, k, n.Content[i+1], false)
		}
	}
	if merges {
		// The keys of n itself are set: merged ones fill only what is left.
		d.merging = append(d.merging, n)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if isMerge(n.Content[i]) {
				d.merge(n.Content[i+1], func(k, val *yaml.Node, merged bool) { d.structField(si, v, &set, k, val, merged) }, false)
			}
		}
		d.merging = d.merging[:len(d.merging)-1]
	}
}

func (d *Decoder) structField(si *structInfo, v reflect.Value, set *uint64, k, val *yaml.Node, merged bool) {
	key := k.Value
	d.Push(key)
	i, ok := si.index[key]
	switch {
	case !ok:
		d.looseErr(k, func() string { return "unknown field" }, func() string { return fixUnknown(key, si.names) })
	case *set&(1<<i) != 0:
		if !merged {
			d.looseErr(k, func() string { return "field given twice" }, func() string { return "remove one of them" })
		}
	default:
		*set |= 1 << i
		d.decode(val, v.FieldByIndex(si.fields[i]))
	}
	d.Pop()
}

var stringMapType = reflect.TypeFor[map[string]string]()

func (d *Decoder) mapValue(n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.typeErr(n, func() string { return "want a mapping, got " + KindWord(n) }, "")
		return
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		panic("yamldoc: internal error: cannot decode YAML into " + t.String())
	}
	// map[string]string is the common case (params, labels, env): filled
	// without reflection.
	if t == stringMapType {
		m := make(map[string]string, len(n.Content)/2)
		var left map[string]bool // keys whose value was not a string, left out
		d.pairs(n, false, func(k, val *yaml.Node, merged bool) {
			if _, dup := m[k.Value]; dup || left[k.Value] {
				if !merged {
					d.dupKey(k)
				}
				return
			}
			d.Push(k.Value)
			if d.stringValue(k, val) {
				m[k.Value] = d.str(val)
			} else {
				if left == nil {
					left = map[string]bool{}
				}
				left[k.Value] = true
			}
			d.Pop()
		})
		v.Set(reflect.ValueOf(m))
		return
	}
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	d.pairs(n, false, func(k, val *yaml.Node, merged bool) {
		key := reflect.ValueOf(k.Value).Convert(t.Key())
		if m.MapIndex(key).IsValid() {
			if !merged {
				d.dupKey(k)
			}
			return
		}
		d.Push(k.Value)
		e := reflect.New(t.Elem()).Elem()
		d.decode(val, e)
		d.Pop()
		m.SetMapIndex(key, e)
	})
	v.Set(m)
}

// stringValue reports whether val, the value of key k in a map of
// strings (params, env, labels), is a string in YAML terms, and reports
// it when it is not: an unquoted true, 3 or an empty value is a boolean,
// a number or null, which the Kubernetes API server refuses for these
// fields and a template would see as a string unlike what it reads
// ("false" is truthy). A mapping or a list is a wrong type.
func (d *Decoder) stringValue(k, val *yaml.Node) bool {
	n := val
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str", n.Kind == yaml.AliasNode:
		return true // an alias without anchor is reported by str
	case n.Kind == yaml.MappingNode, n.Kind == yaml.SequenceNode:
		d.typeErr(val, func() string { return "want a string, got " + KindWord(n) },
			fmt.Sprintf("the values here are strings: write it as one, quoted, or as a literal block (%s: |)", k.Value))
		return false
	case n.Tag == "!!null":
		d.typeErr(val, func() string { return "want a string, got an empty value (null)" },
			fmt.Sprintf(`quote it: %s: "", or remove the key`, k.Value))
		return false
	}
	what := map[string]string{"!!bool": "a boolean", "!!int": "a number", "!!float": "a number", "!!timestamp": "a timestamp"}[n.Tag]
	if what == "" {
		what = "a value tagged " + n.Tag
	}
	d.typeErr(val, func() string {
		if len(n.Value) > 40 {
			return fmt.Sprintf("want a string, got %s, %s", KindWord(n), what)
		}
		return fmt.Sprintf("want a string, got %s, %s", n.Value, what)
	},
		fmt.Sprintf("quote it: %s: %s", Clip(k.Value), Quote(n.Value)))
	return false
}

func (d *Decoder) dupKey(k *yaml.Node) {
	d.Push(k.Value)
	d.looseErr(k, func() string { return "key given twice" }, func() string { return "remove one of them" })
	d.Pop()
}

func (d *Decoder) sliceValue(n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.typeErr(n, func() string { return "want a list, got " + KindWord(n) }, "write it as a YAML list (- item)")
		return
	}
	// []string (dependencies, args) without reflection per item.
	if v.Type() == stringSliceType {
		s := make([]string, len(n.Content))
		for i, item := range n.Content {
			d.pushIndex(i)
			s[i] = d.str(item)
			d.Pop()
		}
		v.Set(reflect.ValueOf(s))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.pushIndex(i)
		d.decode(item, s.Index(i))
		d.Pop()
	}
	v.Set(s)
}

var stringSliceType = reflect.TypeFor[[]string]()

func fixUnknown(key string, names []string) string {
	for _, name := range names {
		if strings.EqualFold(name, key) || strings.EqualFold(strings.ReplaceAll(name, "-", ""), strings.ReplaceAll(key, "_", "")) {
			return fmt.Sprintf("did you mean %q?", name)
		}
	}
	// A typo: the closest name at most two edits away ("handlr", "timout").
	// Long keys are no typo of a field name (and cost edit-distance time).
	if len(key) < 64 {
		best, bestDist := "", 3
		for _, name := range names {
			if d := EditDistance(strings.ToLower(key), strings.ToLower(name)); d < bestDist && d < len(name)/2 {
				best, bestDist = name, d
			}
		}
		if best != "" {
			return fmt.Sprintf("did you mean %q?", best)
		}
	}
	return "known fields: " + strings.Join(names, ", ")
}

// EditDistance is the Levenshtein distance between a and b, in bytes. It
// allocates two rows of len(b)+1: pass the short string as b.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// KindWord names what n is in a problem: "a mapping", "a list", "an
// alias", or the scalar's value, quoted.
func KindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return Quote(n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "an unsupported node"
}

// typeWord names t in a problem: its Scalar's Word, or its Go name.
func (d *Decoder) typeWord(t reflect.Type) string {
	for _, sc := range d.opts.Scalars {
		if sc.Type == t && sc.Word != "" {
			return sc.Word
		}
	}
	return t.String()
}
