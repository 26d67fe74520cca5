package yamldoc

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Lines finds the line of a field of a document after its node tree is
// gone (a loader keeps no tree: holding them all would cost memory and
// garbage-collection time linear in the input, for problems most inputs
// do not have). It parses the document's text again, once, the first
// time a problem needs a line in it. Its zero value is not ready: use
// NewLines.
type Lines struct {
	root   string              // the key the paths of Line start below
	raw    map[string][]rawDoc // per file, by line
	parsed map[docKey]*yaml.Node
	// keys indexes the keys of large roots, so that locating one problem
	// per entry of a root with many keys stays linear.
	keys map[*yaml.Node]map[string]*yaml.Node
}

// docKey names a document by file and line.
type docKey struct {
	file string
	line int
}

// rawDoc is the text of the document at line of its file; the text's first
// line is line base+1.
type rawDoc struct {
	line int
	text []byte
	base int
}

// NewLines returns a Lines whose paths start below the key root of each
// document (e.g. "spec").
func NewLines(root string) *Lines {
	return &Lines{root: root, raw: map[string][]rawDoc{}, parsed: map[docKey]*yaml.Node{}, keys: map[*yaml.Node]map[string]*yaml.Node{}}
}

// reserve makes room for the docs documents of file.
func (ls *Lines) reserve(file string, docs int) { ls.raw[file] = make([]rawDoc, 0, docs) }

// add records the text of doc. The documents of a file are added in the
// order of their lines.
func (ls *Lines) add(doc Document) {
	ls.raw[doc.File] = append(ls.raw[doc.File], rawDoc{doc.Line, doc.Text, doc.TextBase})
}

// Reparsed counts the documents parsed again to find a line in them.
func (ls *Lines) Reparsed() int { return len(ls.parsed) }

// find returns the text of the document at line of file.
func (ls *Lines) find(file string, line int) (rawDoc, bool) {
	docs := ls.raw[file]
	i, ok := slices.BinarySearchFunc(docs, line, func(r rawDoc, line int) int { return cmp.Compare(r.line, line) })
	if !ok {
		return rawDoc{}, false
	}
	return docs[i], true
}

// rootNode returns the root node of the document at line of file, and
// its line offset.
func (ls *Lines) rootNode(file string, line int) (*yaml.Node, int) {
	raw, ok := ls.find(file, line)
	if !ok {
		return nil, 0
	}
	k := docKey{file, line}
	n, ok := ls.parsed[k]
	if !ok {
		dec := yaml.NewDecoder(bytes.NewReader(raw.text))
		for {
			var d yaml.Node
			if dec.Decode(&d) != nil {
				break
			}
			if len(d.Content) == 1 && raw.base+d.Content[0].Line == line {
				n = Find(d.Content[0], ls.root)
				break
			}
		}
		ls.parsed[k] = n
	}
	return n, raw.base
}

// Line returns the line of the field at path (string keys, int indexes)
// below the root of the document whose top node is at line of file, or
// line when the field is not written there (or ls is nil).
func (ls *Lines) Line(file string, line int, path ...any) int {
	if ls == nil {
		return line
	}
	root, base := ls.rootNode(file, line)
	if root == nil {
		return line
	}
	n := root
	if key, ok := firstKey(path); ok {
		n, path = ls.child(root, key), path[1:]
	}
	if n = Find(n, path...); n != nil {
		return base + n.Line
	}
	return line
}

func firstKey(path []any) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	key, ok := path[0].(string)
	return key, ok
}

// smallMapping is the number of keys up to which child scans a mapping
// rather than index it.
const smallMapping = 32

// child is Find(root, key), from an index of root's keys when root is
// large (each answer, a merged key's or an absent one's too, is kept).
func (ls *Lines) child(root *yaml.Node, key string) *yaml.Node {
	if root.Kind != yaml.MappingNode || len(root.Content) <= 2*smallMapping {
		return Find(root, key)
	}
	idx, ok := ls.keys[root]
	if !ok {
		idx = make(map[string]*yaml.Node, len(root.Content)/2)
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k := root.Content[i]; !isMerge(k) {
				if _, dup := idx[k.Value]; !dup {
					idx[k.Value] = root.Content[i+1]
				}
			}
		}
		ls.keys[root] = idx
	}
	n, ok := idx[key]
	if !ok {
		n = Find(root, key)
		idx[key] = n
	}
	return n
}

// RelatedField reports whether one of paths is field, inside it, or
// around it ("spec.rules[1]" and "spec.rules[1].from" are related,
// "spec.rules[1]" and "spec.rules[10]" are not).
func RelatedField(paths []string, field string) bool {
	within := func(inner, outer string) bool {
		return strings.HasPrefix(inner, outer) && (len(inner) == len(outer) || inner[len(outer)] == '.' || inner[len(outer)] == '[')
	}
	for _, p := range paths {
		if within(p, field) || within(field, p) {
			return true
		}
	}
	return false
}

// Find returns the node at path below n (string keys, int indexes), or nil.
// It follows aliases and merge keys (<<) as decoding does.
func Find(n *yaml.Node, path ...any) *yaml.Node {
	for _, p := range path {
		if n == nil {
			return nil
		}
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch p := p.(type) {
		case string:
			n = lookup(n, p, 0)
		case int:
			if n.Kind != yaml.SequenceNode || p >= len(n.Content) {
				return nil
			}
			n = n.Content[p]
		}
	}
	return n
}

// lookup returns the value of key in mapping n, looking into merged
// mappings when n has no such key of its own. depth bounds merges of
// merges.
func lookup(n *yaml.Node, key string, depth int) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode || depth > 8 {
		return nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if isMerge(k) {
			merges = append(merges, n.Content[i+1])
		} else if k.Value == key {
			return n.Content[i+1]
		}
	}
	for _, m := range merges {
		for m.Kind == yaml.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		list := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			list = m.Content
		}
		for _, item := range list {
			if v := lookup(item, key, depth+1); v != nil {
				return v
			}
		}
	}
	return nil
}
