package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// apiVersion is the group and version of every document -o json and -o
// yaml print, as of the catalog's and the CRD's documents.
const apiVersion = "hopdag.io/v1alpha1"

// The kinds of the documents -o json|yaml print; schema/KIND.json is each
// one's JSON Schema (schema_test.go validates every output against it).
const (
	kindPlan             = "Plan"
	kindStatus           = "Status"
	kindTargets          = "Targets"
	kindValidationReport = "ValidationReport"
	kindGraph            = "Graph"
	kindVersion          = "Version"
)

// printer writes the documents of -o json and -o yaml, the one way every
// command prints data for machines: apiVersion and kind first, then the
// object's fields as its JSON encoding names them, with the fixes of
// its kind (fixes) applied: field names as the catalog and the CRD spell
// them, hops numbered from 1 as every table numbers them. Durations are
// Go duration strings ("1m30s") because every duration type of the
// records marshals so.
type printer struct {
	format string // json or yaml
	// compact writes JSON documents on one line each (a stream, status
	// --watch); YAML documents of a stream start with "---".
	compact bool
}

// document renders obj as a document of kind.
func (p printer) document(kind string, obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s: %w", kind, err)
	}
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil, fmt.Errorf("encoding the %s: %w", kind, err)
	}
	doc := node.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("encoding the %s: not an object", kind)
	}
	doc.Content = append([]*yaml.Node{str("apiVersion"), str(apiVersion), str("kind"), str(kind)}, doc.Content...)
	if fix := fixes[kind]; fix != nil {
		fix(doc)
	}
	var b bytes.Buffer
	switch p.format {
	case "json":
		writeJSON(&b, doc)
		if !p.compact {
			var out bytes.Buffer
			if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
				return nil, err
			}
			b = out
		}
		b.WriteByte('\n')
	default:
		plain(doc)
		if p.compact {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(doc); err != nil {
			return nil, err
		}
		enc.Close()
	}
	return b.Bytes(), nil
}

// print writes obj as a document of kind to the command's stdout.
func (c *cli) print(kind string, obj any) error {
	out, err := printer{format: *c.output}.document(kind, obj)
	if err != nil {
		return err
	}
	_, err = c.stdout.Write(out)
	return err
}

// str is a string scalar.
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// fixes put a kind's fields in the terms of the catalog and the tables.
var fixes = map[string]func(doc *yaml.Node){
	// The graph's nodes name their dependencies as the catalog does.
	kindGraph: func(doc *yaml.Node) {
		for _, n := range field(doc, "nodes").Content {
			rename(n, "deps", "dependencies")
		}
	},
	// The status record counts hops from 0; tables and --hop from 1.
	kindStatus: func(doc *yaml.Node) {
		addOne(field(doc, "currentHop"))
		addOne(field(field(doc, "lastFailure"), "hop"))
		for _, h := range field(doc, "hops").Content {
			for _, c := range field(h, "components").Content {
				addOne(field(field(c, "lastFailure"), "hop"))
			}
		}
	},
}

// field is the value of key in the mapping m; an empty node when there is
// none.
func field(m *yaml.Node, key string) *yaml.Node {
	if m != nil && m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
	}
	return &yaml.Node{}
}

// rename renames the key from of the mapping m to to.
func rename(m *yaml.Node, from, to string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == from {
			m.Content[i].Value = to
		}
	}
}

// addOne adds one to an integer scalar (a 0-based hop index).
func addOne(n *yaml.Node) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return
	}
	if i, err := strconv.Atoi(n.Value); err == nil {
		n.Value = strconv.Itoa(i + 1)
	}
}

// plain drops the quoting and flow styles that parsing JSON left, so that
// the YAML reads as YAML; a string that would read as another type stays
// quoted (the encoder sees to it).
func plain(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}

// writeJSON writes the node tree of a JSON document back as compact JSON,
// in its order.
func writeJSON(b *bytes.Buffer, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			writeJSON(b, n.Content[i+1])
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, c)
		}
		b.WriteByte(']')
	default:
		if n.Tag == "!!str" {
			v, _ := json.Marshal(n.Value)
			b.Write(v)
			return
		}
		// Numbers, booleans and null are as JSON wrote them.
		b.WriteString(n.Value)
	}
}
