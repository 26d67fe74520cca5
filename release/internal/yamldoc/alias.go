package yamldoc

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"

	"go.yaml.in/yaml/v3"
)

// maxAliasBytes bounds the text that the aliases of one document bring in:
// the bytes of the scalars (keys and values) of the nodes they name,
// counted once per alias, through aliases inside them too. An alias costs
// what decoding and checking its value costs (a constraint is parsed once
// per alias, a key hashed once per alias), so without it a document's few
// kilobytes of aliases of one large anchored value multiplied the work:
// 400 aliases of a 128 KB constraint took 15 s and 987 MB to load.
// maxAliasNodes bounds the values aliases bring in, this their size.
const maxAliasBytes = 1 << 20

// aliasExpansion is what the aliases of a document bring in: bytes
// (saturating at 1<<62), and the alias at which they first went past
// maxAliasBytes (nil when they did not).
type aliasExpansion struct {
	bytes int64
	over  *yaml.Node
}

// expandAliases counts the bytes the aliases of the document top (whose
// text is text) bring in. It walks the tree once: the size of each
// anchored node is kept when the walk leaves it, before any alias of it
// (YAML defines an anchor before its aliases); an alias inside the node
// it names counts nothing here (decoding it stops at maxAliasNodes). A
// document without "*" has no alias and is not walked.
func expandAliases(top *yaml.Node, text []byte) aliasExpansion {
	if bytes.IndexByte(text, '*') < 0 {
		return aliasExpansion{}
	}
	w := aliasWalk{}
	w.size(top)
	return w.aliasExpansion
}

type aliasWalk struct {
	aliasExpansion
	anchored map[*yaml.Node]int64 // the expanded size of each anchored node walked
}

// size returns the expanded size of n (its scalars' bytes, its aliases'
// included) and adds each alias it holds to w.bytes.
func (w *aliasWalk) size(n *yaml.Node) int64 {
	if n.Kind == yaml.AliasNode {
		s := w.anchored[n.Alias] // 0 for a nil Alias, or an alias inside its anchor
		w.bytes = addSat(w.bytes, s)
		if w.bytes > maxAliasBytes && w.over == nil {
			w.over = n
		}
		return s
	}
	s := int64(len(n.Value))
	for _, k := range n.Content {
		s = addSat(s, w.size(k))
	}
	if n.Anchor != "" {
		if w.anchored == nil {
			w.anchored = map[*yaml.Node]int64{}
		}
		w.anchored[n] = s
	}
	return s
}

// addSat is a+b for sizes, at most 1<<62: nested aliases of aliases can
// double a size at each level.
func addSat(a, b int64) int64 {
	const top = 1 << 62
	if a >= top-b {
		return top
	}
	return a + b
}

func (d *Decoder) alias(n *yaml.Node, v reflect.Value) {
	if n.Alias == nil {
		d.typeErr(n, func() string { return fmt.Sprintf("alias *%s names no anchor", n.Value) }, "define the anchor before using it")
		return
	}
	if d.noAliases {
		d.typeErrs++ // reported once, by refuseAliases
		return
	}
	d.aliasDepth++
	if d.via == nil {
		d.via = n
		defer func() { d.via = nil }()
	}
	d.decode(n.Alias, v)
	d.aliasDepth--
}

// countAlias counts a value decoded through an alias and reports false,
// once per document, when there are more than maxAliasNodes.
func (d *Decoder) countAlias(n *yaml.Node) bool {
	if d.overAliases {
		return false
	}
	d.aliasNodes++
	if d.aliasNodes <= maxAliasNodes {
		return true
	}
	d.overAliases = true
	d.typeErrs++
	d.r.Report(Problem{File: d.file, Line: d.base + n.Line, Field: d.field(),
		Message: fmt.Sprintf("aliases expand to more than %d values in this document (the limit)", maxAliasNodes),
		Fix:     "write the values out, or alias fewer, larger nodes"})
	return false
}

// refuseAliases reports that the aliases of the document bring in more
// than maxAliasBytes (x), and has its aliases left unfollowed: the
// document does not join the catalog.
func (d *Decoder) refuseAliases(x aliasExpansion) {
	d.noAliases = true
	d.typeErrs++
	msg := fmt.Sprintf("aliases bring in %d bytes of values in this document, %d more than the limit of %d (1 MiB)", x.bytes, x.bytes-maxAliasBytes, maxAliasBytes)
	if x.bytes >= 1<<62 {
		msg = fmt.Sprintf("aliases of aliases bring in more than 2^62 bytes of values in this document, the limit is %d (1 MiB)", maxAliasBytes)
	}
	d.r.Report(Problem{File: d.file, Line: d.base + x.over.Line, Message: msg,
		Fix: "write the values out, or alias smaller ones: an alias costs what its value costs each time it is used (the document's own text may be up to 8 MiB)"})
}

// isMerge reports whether k is the YAML merge key <<.
func isMerge(k *yaml.Node) bool {
	return len(k.Value) == 2 && k.Tag == "!!merge"
}

// pairs calls fn for each key/value of mapping n, then for those of the
// mappings its merge keys (<<) name, as YAML defines merging: a key of n
// overrides a merged one, and an earlier merged mapping overrides a later
// one (fn skips keys it has, silently when merged is true). Reaching a
// merged mapping counts as an alias use, and so does each of its pairs: a
// mapping of many keys merged many times costs at most maxAliasNodes.
func (d *Decoder) pairs(n *yaml.Node, merged bool, fn func(k, v *yaml.Node, merged bool)) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if isMerge(k) {
			merges = append(merges, n.Content[i+1])
			continue
		}
		if merged && !d.countAlias(k) {
			return
		}
		fn(k, n.Content[i+1], merged)
	}
	if len(merges) == 0 {
		return
	}
	d.merging = append(d.merging, n)
	for _, m := range merges {
		d.merge(m, fn, false)
	}
	d.merging = d.merging[:len(d.merging)-1]
}

// merge calls fn for the pairs of the mapping (or, outside a list, the
// list of mappings) that the value m of a merge key names.
func (d *Decoder) merge(m *yaml.Node, fn func(k, v *yaml.Node, merged bool), inList bool) {
	target := m
	if d.noAliases && m.Kind == yaml.AliasNode {
		d.typeErrs++ // reported once, by refuseAliases
		return
	}
	for target.Kind == yaml.AliasNode && target.Alias != nil {
		target = target.Alias
	}
	switch {
	case target.Kind == yaml.MappingNode && slices.Contains(d.merging, target):
		d.typeErr(m, func() string { return "a merge key (<<) names a mapping it is part of" }, "merge a mapping defined outside this one")
	case target.Kind == yaml.MappingNode:
		if !d.countAlias(target) {
			return
		}
		d.aliasDepth++
		d.pairs(target, true, fn)
		d.aliasDepth--
	case target.Kind == yaml.SequenceNode && !inList:
		for _, item := range target.Content {
			d.merge(item, fn, true)
		}
	default:
		d.typeErr(m, func() string {
			return "a merge key (<<) must name a mapping or a list of mappings, got " + KindWord(target)
		},
			"write <<: *anchor, or <<: [*a, *b], where the anchors name mappings")
	}
}
