package yamldoc

import "go.yaml.in/yaml/v3"

// flow parses a flow sequence or mapping on one line, or a scalar in one.
func (p *fastParser) flow() *yaml.Node {
	p.depth++
	if p.depth > maxFastDepth {
		p.fail()
	}
	defer func() { p.depth-- }()
	switch p.at(p.i) {
	case '"', '\'':
		return p.quoted()
	case '[':
		return p.flowCollection(yaml.SequenceNode, ']')
	case '{':
		return p.flowCollection(yaml.MappingNode, '}')
	}
	return p.plain(true)
}

func (p *fastParser) flowCollection(kind yaml.Kind, closing byte) *yaml.Node {
	tag := "!!seq"
	if kind == yaml.MappingNode {
		tag = "!!map"
	}
	n := p.newNode(kind, tag, yaml.FlowStyle)
	p.i++
	p.flowSpaces()
	base := len(p.kids)
	if p.at(p.i) == closing {
		p.i++
		return n
	}
	for {
		if kind == yaml.MappingNode {
			c := p.at(p.i)
			if c == '[' || c == '{' {
				p.fail() // a collection as a key
			}
			start := p.i
			k := p.flow()
			p.flowSpaces()
			if p.at(p.i) != ':' || p.i-start > 1000 {
				p.fail() // a key without a value, or past yaml.v3's 1,024 bytes for a key
			}
			p.i++
			if k.Style == 0 && !p.blankz(p.i) {
				p.fail()
			}
			p.flowSpaces()
			if c := p.at(p.i); c == ',' || c == closing {
				p.fail() // an empty value
			}
			p.kids = append(p.kids, k)
		}
		p.kids = append(p.kids, p.flow())
		p.flowSpaces()
		c := p.at(p.i)
		if c == closing {
			p.i++
			break
		}
		if c != ',' {
			p.fail()
		}
		p.i++
		p.flowSpaces()
		if c := p.at(p.i); c == closing || c == ',' {
			p.fail() // a trailing comma
		}
	}
	n.Content = p.a.content(p.kids[base:])
	p.kids = p.kids[:base]
	return n
}

// flowSpaces skips spaces; a line break inside a flow collection is left
// to yaml.v3.
func (p *fastParser) flowSpaces() {
	p.i = p.spaces(p.i)
	if c := p.at(p.i); c == '\n' || c == 0 || c == '#' {
		p.fail()
	}
}
