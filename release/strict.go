package release

import (
	"encoding"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// strict decoding: yaml.v3's KnownFields option reports "field x not found in
// type y" without the field's path, and stops at the first document. The
// walker below checks a node tree against the Go type it will decode into,
// reporting every unknown field and wrong type with its path and line; only
// then is the node decoded.

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	linePrefix      = regexp.MustCompile(`^(yaml: )?line (\d+): `)
)

// decodeStrict checks n against the type of out, then decodes it. It reports
// problems through report and returns false when there were any.
func decodeStrict(n *yaml.Node, out any, field string, report func(line int, field, msg, fix string)) bool {
	w := &walker{anchors: map[anchorUse]bool{}, fields: map[reflect.Type]map[string]reflect.StructField{}, report: report}
	w.check(n, reflect.TypeOf(out).Elem(), field)
	if w.problems > 0 {
		return false
	}
	if err := n.Decode(out); err != nil {
		line, msg := n.Line, err.Error()
		if m := linePrefix.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[2])
			msg = msg[len(m[0]):]
		}
		report(line, field, strings.TrimPrefix(msg, "release: "), "")
		return false
	}
	return true
}

// anchorUse is an anchored node checked against a Go type.
type anchorUse struct {
	n *yaml.Node
	t reflect.Type
}

// walker checks one document. An anchored node is checked once per Go type
// (anchors): walking it again for every alias that names it would let a small
// file of aliases to lists of aliases cost N^2 or more. fields caches each
// struct type's YAML keys.
type walker struct {
	anchors  map[anchorUse]bool
	fields   map[reflect.Type]map[string]reflect.StructField
	report   func(line int, field, msg, fix string)
	problems int
}

func (w *walker) problem(line int, field, msg, fix string) {
	w.problems++
	w.report(line, field, msg, fix)
}

// check walks n against t.
func (w *walker) check(n *yaml.Node, t reflect.Type, field string) {
	anchors := w.anchors
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Anchor != "" {
		if anchors[anchorUse{n, t}] {
			return
		}
		anchors[anchorUse{n, t}] = true
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value decodes to the zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[yaml.Node]() {
		return // decoded later, by the caller
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		if n.Kind != yaml.ScalarNode {
			w.problem(n.Line, field, fmt.Sprintf("want a single value (%s), got %s", typeWord(t), kindWord(n)), "")
			return
		}
		u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
		if err := u.UnmarshalText([]byte(n.Value)); err != nil {
			w.problem(n.Line, field, strings.TrimPrefix(err.Error(), "release: "), "")
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.problem(n.Line, field, fmt.Sprintf("want a mapping, got %s", kindWord(n)), "")
			return
		}
		fields, ok := w.fields[t]
		if !ok {
			fields = yamlFields(t)
			w.fields[t] = fields
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := join(field, k.Value)
			if seen[k.Value] {
				w.problem(k.Line, sub, "field given twice", "remove one of them")
				continue
			}
			seen[k.Value] = true
			f, ok := fields[k.Value]
			if !ok {
				w.problem(k.Line, sub, "unknown field", fixUnknown(k.Value, fields))
				continue
			}
			w.check(v, f.Type, sub)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.problem(n.Line, field, fmt.Sprintf("want a mapping, got %s", kindWord(n)), "")
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := join(field, k.Value)
			if seen[k.Value] {
				w.problem(k.Line, sub, "key given twice", "remove one of them")
				continue
			}
			seen[k.Value] = true
			w.check(v, t.Elem(), sub)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.problem(n.Line, field, fmt.Sprintf("want a list, got %s", kindWord(n)), "write it as a YAML list (- item)")
			return
		}
		for i, item := range n.Content {
			w.check(item, t.Elem(), fmt.Sprintf("%s[%d]", field, i))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.problem(n.Line, field, fmt.Sprintf("want a string, got %s", kindWord(n)), "")
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			w.problem(n.Line, field, fmt.Sprintf("want true or false, got %s", kindWord(n)), "")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			w.problem(n.Line, field, fmt.Sprintf("want a whole number, got %s", kindWord(n)), "")
		}
	}
}

// yamlFields maps a struct's YAML keys to its fields; fields tagged "-" are
// not settable from YAML.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && opts == "inline" {
			// An embedded struct's keys are the outer struct's.
			maps.Copy(fields, yamlFields(f.Type))
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f
	}
	return fields
}

func fixUnknown(key string, fields map[string]reflect.StructField) string {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if strings.EqualFold(name, key) || strings.EqualFold(strings.ReplaceAll(name, "-", ""), strings.ReplaceAll(key, "_", "")) {
			return fmt.Sprintf("did you mean %q?", name)
		}
	}
	// A typo: the closest name at most two edits away ("handlr", "timout").
	best, bestDist := "", 3
	for _, name := range names {
		if d := editDistance(strings.ToLower(key), strings.ToLower(name)); d < bestDist && d < len(name)/2 {
			best, bestDist = name, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return "known fields: " + strings.Join(names, ", ")
}

// editDistance is the Levenshtein distance between a and b, in bytes. It
// allocates two rows of len(b)+1: pass the short string as b.
func editDistance(a, b string) int {
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

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func kindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported node"
}

func typeWord(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Version]():
		return "a version such as v26.06"
	case reflect.TypeFor[Constraint]():
		return "a version or range such as \">= v26.06, < v26.09\""
	case reflect.TypeFor[Duration]():
		return "a duration such as 90s"
	}
	return t.String()
}

// find returns the node at path below n (string keys, int indexes), or nil.
func find(n *yaml.Node, path ...any) *yaml.Node {
	for _, p := range path {
		if n == nil {
			return nil
		}
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch p := p.(type) {
		case string:
			var next *yaml.Node
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == p {
						next = n.Content[i+1]
					}
				}
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || p >= len(n.Content) {
				return nil
			}
			n = n.Content[p]
		}
	}
	return n
}
