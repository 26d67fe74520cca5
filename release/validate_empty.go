package release

import (
	"fmt"
	"slices"
	"strings"
)

// Checks of what a catalog says that admits nothing: a rule that gives no
// edge, a supports range that no release meets, an UpgradePath for a track
// without releases. Each would be accepted silently otherwise, and is most
// likely a mistake (a swapped range, a misspelt track).

// supported answers whether a supports constraint admits a release of a
// track, once per track and constraint as written (releases that support
// the same range, release after release, cost one check).
type supported struct {
	c    *Catalog
	seen map[supportedKey]bool
}

type supportedKey struct{ track, constraint string }

func (s *supported) any(track string, c Constraint) bool {
	k := supportedKey{track, c.String()}
	ok, seen := s.seen[k]
	if !seen {
		ok = slices.ContainsFunc(s.c.TrackVersions(track), c.Check)
		s.seen[k] = ok
	}
	return ok
}

// validateRuleRange reports, as warnings (ws), a rule from a version to
// itself and a from that admits no version (">= v5.0.0, < v3.0.0"): such
// a rule applies to no edge, so it does nothing, whatever it says
// (allowed, deprecated or blocked). Not errors: a generated catalog may
// hold such rules (../testdata/two-track does, and path's property tests
// generate them), and none changes a route. at and bad take a path below
// the rule.
func validateRuleRange(r Rule, at func(path ...any) Problem, bad func(key string) bool, ws *problems) {
	if bad("from") || r.From.IsZero() {
		return
	}
	if why := r.From.contradiction(); why != "" {
		does := "gives no edge"
		if r.Blocked != "" {
			does = "blocks nothing"
		}
		ws.add(at("from").with(fmt.Sprintf("from %s admits no version: none is %s: the rule %s", quote(r.From.String()), why, does),
			"correct the range (are its bounds the wrong way round?), or remove the rule"))
		return
	}
	if from, exact := r.From.Exact(); exact && !bad("to") && !r.To.IsZero() && from.Compare(r.To) == 0 {
		ws.add(at("to").with(fmt.Sprintf("rule upgrades from %s to itself%s: it gives no edge", from, sameSpelling(from, r.To)),
			"set to to the version the rule upgrades to, or remove the rule"))
	}
}

// validateEmptyPath reports an UpgradePath with no rules and no versions
// on a track with no releases: it applies to nothing, most likely because
// its track is misspelt.
func validateEmptyPath(c *Catalog, p *UpgradePath, at func(path ...any) Problem, bad func(path ...any) bool, ps *problems) {
	if len(p.Rules) > 0 || len(p.Versions) > 0 || bad("rules") || bad("versions") || bad("track") ||
		CheckTrackName(p.Track) != nil || len(c.TrackVersions(p.Track)) > 0 {
		return // a bad track name is reported as such
	}
	where, track := at(), "the default track (no spec.track)"
	if p.Track != "" {
		where, track = at("track"), "track "+quote(p.Track)
	}
	var tracks []string
	for _, t := range c.Tracks() {
		if t == "" {
			t = "the default track"
		}
		tracks = append(tracks, t)
	}
	fix := "add the releases and rules it is for, or remove it"
	if len(tracks) > 0 {
		fix = "set spec.track to the track of the releases it is for (" + strings.Join(tracks, ", ") + "), or remove it"
	}
	name := "UpgradePath " + p.Name
	if p.Name == "" {
		name = "the UpgradePath"
	}
	ps.add(where.with(fmt.Sprintf("%s has no rules, and %s has no releases: it applies to nothing", name, track), fix))
}
