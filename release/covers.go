package release

// Covers reports whether v lies in the range c describes, prereleases
// included: unlike Check, it does not apply the prerelease rules, so
// `< v1.2` covers v1.1-rc.1 and `>= v26.06, < v26.09` covers v26.09-rc.1.
// A rule that blocks an edge uses it: a blocking range must not fail open
// for the prereleases inside it.
func (c Constraint) Covers(v Version) bool {
	if v.IsZero() {
		return false
	}
	for _, alt := range c.alts {
		if altCovers(alt, v) {
			return true
		}
	}
	return false
}

// altCovers reports whether v meets every comparison of alt, ignoring the
// prerelease rule (Check adds it for allowing rules; Covers does not).
func altCovers(alt []comparison, v Version) bool {
	for _, cm := range alt {
		d := v.Compare(cm.v)
		var ok bool
		switch cm.op {
		case opEQ:
			ok = d == 0
		case opNE:
			ok = d != 0
		case opGT:
			ok = d > 0
		case opGE:
			ok = d >= 0
		case opLT:
			ok = d < 0
		case opLE:
			ok = d <= 0
		}
		if !ok {
			return false
		}
	}
	return true
}
