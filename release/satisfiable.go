package release

import "strings"

// contradiction returns, for the first alternative of c that no version
// meets, the comparisons that contradict each other, written out
// (">= v5.0.0 and < v3.0.0"); "" when every alternative admits a version.
// It finds what the comparisons say alone: the strongest lower and upper
// bounds, the exact versions and the excluded ones; the prerelease rule of
// Check is not considered. It is linear in the comparisons.
func (c Constraint) contradiction() string {
	for _, alt := range c.alts {
		if cs := altContradiction(alt); len(cs) > 0 {
			parts := make([]string, len(cs))
			for i, cm := range cs {
				parts[i] = opNames[cm.op] + " " + cm.v.Original()
			}
			return strings.Join(parts, " and ")
		}
	}
	return ""
}

// altContradiction returns comparisons of alt that no version meets
// together, or nil.
func altContradiction(alt []comparison) []comparison {
	var lo, hi, eq *comparison
	for i := range alt {
		cm := &alt[i]
		switch cm.op {
		case opGT, opGE:
			if lo == nil || cm.v.Compare(lo.v) > 0 || cm.v.Compare(lo.v) == 0 && cm.op == opGT {
				lo = cm
			}
		case opLT, opLE:
			if hi == nil || cm.v.Compare(hi.v) < 0 || cm.v.Compare(hi.v) == 0 && cm.op == opLT {
				hi = cm
			}
		case opEQ:
			if eq == nil {
				eq = cm
			}
		}
	}
	if eq != nil {
		// The one version eq admits must meet every other comparison.
		for _, cm := range alt {
			if !altCovers([]comparison{cm}, eq.v) {
				return []comparison{*eq, cm}
			}
		}
		return nil
	}
	if lo == nil || hi == nil {
		return nil
	}
	switch d := lo.v.Compare(hi.v); {
	case d > 0, d == 0 && (lo.op == opGT || hi.op == opLT):
		return []comparison{*lo, *hi}
	case d == 0:
		// Only lo.v is left: a != of it leaves nothing.
		for _, cm := range alt {
			if cm.op == opNE && cm.v.Compare(lo.v) == 0 {
				return []comparison{*lo, *hi, cm}
			}
		}
	}
	return nil
}
