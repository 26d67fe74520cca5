package release

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Constraint is a set of versions: an exact version (`v26.06-rc.2`), a range
// (`>= v26.06-rc.2, < v26.09`), alternatives joined by `||`, or `*`.
//
// Grammar: alternatives separated by "||"; each alternative is one or more
// comparisons separated by "," (all must hold); a comparison is an operator
// (=, !=, >, >=, <, <=; none means =) followed by a [Version]. "*" alone
// matches every release version.
//
// Prerelease rules, chosen so that a range never silently admits the
// prereleases of a release it does not name:
//
//  1. Comparisons use [Version.Compare] order (rc.2 < rc.10 < GA).
//  2. A prerelease version satisfies an alternative only if one of that
//     alternative's comparisons names a prerelease of the same
//     MAJOR.MINOR.PATCH. So `>= v26.06-rc.2, < v26.09` admits v26.06-rc.3 but
//     not v26.07-rc.1 nor v26.09-rc.1, and `>= v26.03` admits no prerelease.
//     (Masterminds/semver admits the prereleases of every version once a
//     constraint mentions one; npm and Cargo follow the rule used here.)
//  3. An exact version matches itself only, prerelease or not.
//
// The zero Constraint matches nothing and prints as "".
type Constraint struct {
	orig string
	alts [][]comparison
}

type op uint8

const (
	opEQ op = iota
	opNE
	opGT
	opGE
	opLT
	opLE
)

var opNames = [...]string{"=", "!=", ">", ">=", "<", "<="}

// parseOp returns the operator a comparison starts with ("" is =).
func parseOp(s string) (op, bool) {
	switch s {
	case "", "=", "==":
		return opEQ, true
	case "!=":
		return opNE, true
	case ">":
		return opGT, true
	case ">=":
		return opGE, true
	case "<":
		return opLT, true
	case "<=":
		return opLE, true
	}
	return 0, false
}

type comparison struct {
	op op
	v  Version
}

// ParseConstraint parses s; the error names the part that is wrong.
func ParseConstraint(s string) (Constraint, error) {
	c := Constraint{orig: s}
	if strings.TrimSpace(s) == "" {
		return Constraint{}, fmt.Errorf("release: empty constraint: write a version (v26.06) or a range (>= v26.06-rc.1, < v26.06)")
	}
	if strings.TrimSpace(s) == "*" {
		c.alts = [][]comparison{{}}
		return c, nil
	}
	for _, alt := range strings.Split(s, "||") {
		var cmps []comparison
		for _, part := range strings.Split(alt, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				return Constraint{}, fmt.Errorf("release: invalid constraint %s: empty comparison (a stray \",\" or \"||\"?)", quote(s))
			}
			rest := strings.TrimLeft(part, "<>=!~^ ")
			name := strings.TrimSpace(part[:len(part)-len(rest)])
			o, ok := parseOp(name)
			if !ok {
				return Constraint{}, fmt.Errorf("release: invalid constraint %s: comparison %s: unknown operator %s; use =, !=, >, >=, < or <= (a range is two comparisons: >= v1.2, < v1.3)", quote(s), quote(part), quote(name))
			}
			if strings.ContainsAny(rest, " <>=!") {
				return Constraint{}, fmt.Errorf("release: invalid constraint %s: comparison %s holds more than one version; separate comparisons with \",\" (>= v26.06, < v26.09) and alternatives with \"||\"", quote(s), quote(part))
			}
			v, err := ParseVersion(rest)
			if err != nil {
				return Constraint{}, fmt.Errorf("release: invalid constraint %s: comparison %s: %s", quote(s), quote(part), strings.TrimPrefix(err.Error(), "release: "))
			}
			cmps = append(cmps, comparison{o, v})
		}
		c.alts = append(c.alts, cmps)
	}
	return c, nil
}

// MustParseConstraint is ParseConstraint for constants; it panics on error.
func MustParseConstraint(s string) Constraint {
	c, err := ParseConstraint(s)
	if err != nil {
		panic(err)
	}
	return c
}

// ExactConstraint is the constraint that matches v only.
func ExactConstraint(v Version) Constraint {
	return Constraint{orig: v.Original(), alts: [][]comparison{{{opEQ, v}}}}
}

// Check reports whether v satisfies c under the prerelease rules above.
func (c Constraint) Check(v Version) bool {
	for _, alt := range c.alts {
		if altMatches(alt, v) {
			return true
		}
	}
	return false
}

func altMatches(alt []comparison, v Version) bool {
	if v.pre != "" {
		named := false
		for _, cm := range alt {
			if cm.v.pre != "" && cm.v.SameCore(v) {
				named = true
				break
			}
		}
		if !named {
			return false
		}
	}
	return altCovers(alt, v)
}

// Exact returns the version when c is a single exact version (`v26.06` or
// `= v26.06`).
func (c Constraint) Exact() (Version, bool) {
	if len(c.alts) == 1 && len(c.alts[0]) == 1 && c.alts[0][0].op == opEQ {
		return c.alts[0][0].v, true
	}
	return Version{}, false
}

// IsZero reports whether c is the zero Constraint.
func (c Constraint) IsZero() bool { return c.orig == "" && c.alts == nil }

// String is the constraint as written.
func (c Constraint) String() string { return c.orig }

// Normalized prints c with canonical spacing and operators, e.g.
// ">= v26.06-rc.2, < v26.09".
func (c Constraint) Normalized() string {
	if len(c.alts) == 1 && len(c.alts[0]) == 0 {
		return "*"
	}
	alts := make([]string, len(c.alts))
	for i, alt := range c.alts {
		parts := make([]string, len(alt))
		for j, cm := range alt {
			parts[j] = opNames[cm.op] + " " + cm.v.Original()
		}
		alts[i] = strings.Join(parts, ", ")
	}
	return strings.Join(alts, " || ")
}

// Comparison is one term of a Constraint: an operator ("=", "!=", ">",
// ">=", "<", "<=") and a version.
type Comparison struct {
	Op      string
	Version Version
}

// Alternatives returns c's alternatives (the parts joined by "||"), each
// the comparisons that must all hold. "*" is one empty alternative; the zero
// Constraint has none. The prerelease rules of Check still apply on top of
// the comparisons. The result is a copy.
func (c Constraint) Alternatives() [][]Comparison {
	out := make([][]Comparison, len(c.alts))
	for i, alt := range c.alts {
		out[i] = make([]Comparison, len(alt))
		for j, cm := range alt {
			out[i][j] = Comparison{Op: opNames[cm.op], Version: cm.v}
		}
	}
	return out
}

// MarshalText writes the constraint as written.
func (c Constraint) MarshalText() ([]byte, error) { return []byte(c.orig), nil }

// UnmarshalText parses a constraint.
func (c *Constraint) UnmarshalText(b []byte) error {
	p, err := ParseConstraint(string(b))
	if err != nil {
		return err
	}
	*c = p
	return nil
}

// MarshalJSON writes the constraint as a JSON string.
func (c Constraint) MarshalJSON() ([]byte, error) { return json.Marshal(c.orig) }

// UnmarshalJSON reads a JSON string; "" leaves the zero Constraint.
func (c *Constraint) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("release: constraint must be a JSON string: %w", err)
	}
	if s == "" {
		*c = Constraint{}
		return nil
	}
	return c.UnmarshalText([]byte(s))
}

// MarshalYAML writes the constraint as written.
func (c Constraint) MarshalYAML() (any, error) { return c.orig, nil }

// UnmarshalYAML reads the scalar as written (an unquoted 26.10 stays 26.10).
func (c *Constraint) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: release: constraint must be a scalar such as \">= v26.06, < v26.09\"", n.Line)
	}
	return c.UnmarshalText([]byte(n.Value))
}
