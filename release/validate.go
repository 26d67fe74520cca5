package release

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hopdag/hopdag/release/internal/yamldoc"
)

// specNodes finds the line of a field of a loaded document after its
// node tree is gone (yamldoc.Lines: it parses the document's text again,
// once, the first time a problem needs a line in it), and knows which
// documents hide others or hold unusable values. The nil *specNodes
// (NewCatalog) gives lines of documents only.
type specNodes struct {
	lines *yamldoc.Lines
	// hidden are the syntax errors that cost documents: a document a
	// reference finds missing may be one of those.
	hidden []Source
	// bad holds, per document that joined the catalog with unusable
	// values (left zero), the field paths of those values.
	bad map[Source][]string
}

// brokenKey names a Release or ComponentVersion document that could not be
// decoded, by what others refer to it with: kind, track or component name,
// and canonical version.
type brokenKey struct{ kind, name, version string }

func newSpecNodes() *specNodes {
	return &specNodes{lines: yamldoc.NewLines("spec"), bad: map[Source][]string{}}
}

// badField reports whether the field at path below the spec of the
// document at doc, or a value inside it or around it, was unusable and
// left zero: a check of the field would report the zero value, not what
// was written (already reported as a wrong type).
func (sn *specNodes) badField(doc Source, path ...any) bool {
	if sn == nil {
		return false
	}
	bad := sn.bad[doc]
	return len(bad) > 0 && yamldoc.RelatedField(bad, fieldPath(path))
}

// at returns a Problem located at the field path below the document's spec.
func (sn *specNodes) at(doc Source, path ...any) Problem {
	p := Problem{File: doc.File, Line: doc.Line, Field: fieldPath(path)}
	if sn != nil {
		p.Line = sn.lines.Line(doc.File, doc.Line, path...)
	}
	return p
}

func fieldPath(path []any) string {
	var b strings.Builder
	b.WriteString("spec")
	for _, p := range path {
		switch p := p.(type) {
		case string:
			b.WriteByte('.')
			b.WriteString(yamldoc.Clip(p)) // as the decoder writes a field path
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		}
	}
	return b.String()
}

func (p Problem) with(msg, fix string) Problem {
	p.Message, p.Fix = msg, fix
	return p
}

// validate checks every cross-document rule, reports through ps, and indexes
// c. It never follows dependencies transitively, so cycles cannot hang it
// (the dag package reports them).
//
// broken lists the documents Load could not decode (their problems are
// reported already), so that a reference to one of them says so instead
// of calling it missing.
func validate(c *Catalog, sn *specNodes, broken map[brokenKey]Source, ps, ws *problems) {
	for i := range c.Components {
		validateComponent(&c.Components[i], sn, ps)
	}
	// Duplicates, before index() keeps the first of each.
	seenCV := make(map[compKey]*ComponentVersion, len(c.Components))
	for i := range c.Components {
		cv := &c.Components[i]
		k := compKey{cv.Name, cv.Version.Canonical()}
		if first, dup := seenCV[k]; dup && !cv.Version.IsZero() {
			ps.add(sn.at(cv.Source, "version").with(
				fmt.Sprintf("component %s version %s is declared twice%s%s", cv.Name, cv.Version, sameSpelling(first.Version, cv.Version), firstAt(sn.at(first.Source, "version"))),
				"remove one of the two ComponentVersion documents"))
			continue
		}
		seenCV[k] = cv
	}
	seenRel := make(map[trackKey]*Release, len(c.Releases))
	for i := range c.Releases {
		r := &c.Releases[i]
		checkTrackName(r.Track, func() Problem { return sn.at(r.Source, "track") }, ps)
		if r.Version.IsZero() {
			ps.add(sn.at(r.Source).with("release has no version", "set spec.version, e.g. v26.06"))
			continue
		}
		k := trackKey{r.Track, r.Version.Canonical()}
		if first, dup := seenRel[k]; dup {
			ps.add(sn.at(r.Source, "version").with(
				fmt.Sprintf("release %s%s is declared twice%s%s", r.Version, onTrack(r.Track), sameSpelling(first.Version, r.Version), firstAt(sn.at(first.Source, "version"))),
				"remove one of the two Release documents"))
			continue
		}
		seenRel[k] = r
	}
	c.index()
	tracks := map[string]bool{}
	for _, t := range c.Tracks() {
		tracks[t] = true
	}
	shipped := map[string]int{} // reused: cleared for each release
	sup := supported{c: c, seen: map[supportedKey]bool{}}
	for i := range c.Releases {
		validateRelease(c, &c.Releases[i], tracks, &sup, shipped, sn, broken, ps, ws)
	}
	listed := map[trackKey]listedVersion{}
	for i := range c.Paths {
		checkTrackName(c.Paths[i].Track, func() Problem { return sn.at(c.Paths[i].Source, "track") }, ps)
		validatePath(c, &c.Paths[i], sn, broken, listed, ps, ws)
	}
}

// trackNameChars says which characters a track name may hold.
const trackNameChars = `letters, digits, ".", "_" and "-"`

func trackNameChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-'
}

// CheckTrackName returns an error naming the first character of track
// that a track name may not hold (see Release.Track), or nil. The
// empty name, the default track, is valid.
func CheckTrackName(track string) error {
	if msg, fix := trackNameProblem(track); msg != "" {
		return errors.New(msg + "; " + fix)
	}
	return nil
}

// checkTrackName reports a track name that holds a character other than
// trackNameChars. at gives where the name is written; it is called only
// for a bad name, since finding the place parses the document again.
func checkTrackName(track string, at func() Problem, ps *problems) {
	if msg, fix := trackNameProblem(track); msg != "" {
		ps.add(at().with(msg, fix))
	}
}

// trackNameProblem says what is wrong with track, and how to fix it, when
// it holds a character other than trackNameChars (else msg is ""): a
// track is written in step names (TRACK=VERSION, HOP/COMPONENT/PHASE) and
// in states across tracks (track=version,track=version), which "/", "=",
// "," or a space would make ambiguous.
func trackNameProblem(track string) (msg, fix string) {
	i := strings.IndexFunc(track, func(r rune) bool { return !trackNameChar(r) })
	if i < 0 {
		return "", ""
	}
	r, _ := utf8.DecodeRuneInString(track[i:])
	fixed := strings.Map(func(r rune) rune {
		if trackNameChar(r) {
			return r
		}
		return '-'
	}, track)
	return fmt.Sprintf("track %s holds %q; a track name takes only %s (it is written in step names, TRACK=VERSION and HOP/COMPONENT/PHASE, and in states, track=version,track=version)", quote(track), string(r), trackNameChars),
		fmt.Sprintf("rename the track, e.g. %s, here and wherever it is named", fixed)
}

func sameSpelling(a, b Version) string {
	if a.Original() == b.Original() {
		return ""
	}
	return fmt.Sprintf(" (%s and %s are the same version)", a, b)
}

// firstAt is " (first at file:line)" for the place of p, or "" for values
// built in code.
func firstAt(p Problem) string {
	if p.File == "" {
		return ""
	}
	return " (first at " + Source{p.File, p.Line}.String() + ")"
}

func onTrack(track string) string {
	if track == "" {
		return ""
	}
	return " on track " + track
}

func validateComponent(cv *ComponentVersion, sn *specNodes, ps *problems) {
	at := func(path ...any) Problem { return sn.at(cv.Source, path...) }
	// bad: a check of a field left zero because it was unusable would
	// report the zero value, not what was written.
	bad := func(path ...any) bool { return sn.badField(cv.Source, path...) }
	if cv.Name == "" {
		ps.add(at().with("component version has no name", "set spec.name, e.g. etcd"))
	}
	if cv.Version.IsZero() {
		ps.add(at().with("component version has no version", "set spec.version, e.g. v3.5.21"))
	}
	if cv.Type == "" {
		inferType(cv, at, bad, ps)
	}
	validateType(cv, at, bad, ps)
	if cv.Before != "" && cv.Before != BeforeAll {
		ps.add(at("before").with(fmt.Sprintf("before must be %q, got %s", BeforeAll, quote(cv.Before)), "write before: all, or remove the field"))
	}
	validateDependencies(cv, at, bad, ps)
	if cv.Retries != nil && cv.Retries.Attempts < 0 {
		ps.add(at("retries", "attempts").with(fmt.Sprintf("attempts must be at least 1, got %d", cv.Retries.Attempts), "set the total number of attempts, e.g. 3"))
	}
	for i, h := range cv.HealthChecks {
		if h.Name == "" && !bad("healthChecks", i, "name") {
			ps.add(at("healthChecks", i).with("health check has no name", "set name to a check the applier knows, e.g. deployment-ready"))
		}
	}
	for i, m := range cv.Manifests {
		if m.File == "" && m.Template == "" && !bad("manifests", i) {
			ps.add(at("manifests", i).with("a manifest needs file or template", "set file (relative to the catalog root) or template (inline YAML)"))
		}
	}
	validateLifecycle(cv, at, bad, ps)
	validateHelm(cv, at, bad, ps)
}

// inferType sets the type of cv, which has none, from the one field of
// handler, command, manifests, helm and phases it sets, or reports that
// it cannot (unless a field that may have given it was unusable).
func inferType(cv *ComponentVersion, at func(path ...any) Problem, bad func(path ...any) bool, ps *problems) {
	switch {
	case cv.Handler != "" && cv.Command == nil && len(cv.Manifests) == 0:
		cv.Type = TypeInline
	case cv.Handler == "" && cv.Command != nil && len(cv.Manifests) == 0:
		cv.Type = TypeExec
	case cv.Handler == "" && cv.Command == nil && len(cv.Manifests) > 0:
		cv.Type = TypeManifest
	case cv.Handler == "" && cv.Command == nil && len(cv.Manifests) == 0 && cv.Helm != nil:
		cv.Type = TypeHelm
	case cv.Handler == "" && cv.Command == nil && len(cv.Manifests) == 0 && cv.Helm == nil && cv.onlyManifestPhases():
		cv.Type = TypeManifest
	case cv.Handler == "" && cv.Command == nil && len(cv.Manifests) == 0 && cv.Helm == nil && cv.onlyCommandPhases():
		cv.Type = TypeExec
	case slices.ContainsFunc([]string{"type", "handler", "command", "manifests", "helm", "phases"}, func(key string) bool { return bad(key) }):
		// What was written there may have given the type.
	default:
		ps.add(noType(cv, at))
	}
}

// validateType reports what the type of cv needs and cv lacks.
func validateType(cv *ComponentVersion, at func(path ...any) Problem, bad func(path ...any) bool, ps *problems) {
	switch cv.Type {
	case TypeInline:
		if cv.Handler == "" && !bad("handler") {
			ps.add(at("type").with("an inline component needs a handler", "set spec.handler to the name of a registered handler"))
		}
	case TypeExec:
		switch {
		case len(cv.Phases) > 0: // the phases' commands run in its place (validateLifecycle)
			if !cv.hasCommandPhase() && !bad("phases") {
				ps.add(at("type").with("an exec component needs a command", "set spec.command.args to an argv list, e.g. [/usr/bin/upgrade, --to, \"{{.Component.Version}}\"], or give its phases commands"))
			}
		case (cv.Command == nil || len(cv.Command.Args) == 0 || cv.Command.Args[0] == "") && !bad("command"):
			ps.add(at("command").with("an exec component needs a command", "set spec.command.args to an argv list, e.g. [/usr/bin/upgrade, --to, \"{{.Component.Version}}\"]"))
		}
	case TypeManifest:
		if len(cv.Manifests) == 0 && !cv.hasManifestPhase() && !bad("manifests") && !bad("phases") {
			ps.add(at("type").with("a manifest component needs manifests", "add spec.manifests entries with file or template"))
		}
	}
}

// validateDependencies reports a dependency of cv on itself, an empty
// one and one listed twice.
func validateDependencies(cv *ComponentVersion, at func(path ...any) Problem, bad func(path ...any) bool, ps *problems) {
	seen := map[string]bool{}
	for i, d := range cv.Dependencies {
		switch {
		case d == cv.Name:
			ps.add(at("dependencies", i).with(fmt.Sprintf("component %s depends on itself", cv.Name), "remove it from spec.dependencies"))
		case d == "" && bad("dependencies", i):
		case d == "":
			ps.add(at("dependencies", i).with("empty dependency name", "remove the entry"))
		case seen[d]:
			ps.add(at("dependencies", i).with(fmt.Sprintf("dependency %s is listed twice", d), "remove one of them"))
		}
		seen[d] = true
	}
}

// noType is the problem of a component version whose type cannot be
// inferred: none of handler, command, manifests and helm is set, or more
// than one is. It says which type to set for the fields that are there.
func noType(cv *ComponentVersion, at func(path ...any) Problem) Problem {
	type field struct{ key, typ string }
	var set []field
	if cv.Handler != "" {
		set = append(set, field{"handler", TypeInline})
	}
	if cv.Command != nil {
		set = append(set, field{"command", TypeExec})
	}
	if len(cv.Manifests) > 0 {
		set = append(set, field{"manifests", TypeManifest})
	}
	if cv.Helm != nil {
		set = append(set, field{"helm", TypeHelm})
	}
	if len(set) < 2 {
		return at().with("component version has no type", "set spec.type to inline, manifest, exec or a registered type")
	}
	var keys, choices []string
	for _, f := range set {
		keys = append(keys, f.key)
		choices = append(choices, fmt.Sprintf("type: %s to use %s", f.typ, f.key))
	}
	and := strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1]
	all, others := "all", "others"
	if len(set) == 2 {
		all, others = "both", "other"
	}
	p := at(set[0].key) // the line of the first; the field to set is type
	p.Field = fieldPath([]any{"type"})
	return p.with(
		fmt.Sprintf("component version has no type, and %s are %s set: which one runs is not clear", and, all),
		"set "+strings.Join(choices[:len(choices)-1], ", ")+" or "+choices[len(choices)-1]+" (and remove the "+others+")")
}

// validateRelease checks r; shipped is scratch space, for the index of
// each component name in r.Components.
func validateRelease(c *Catalog, r *Release, tracks map[string]bool, sup *supported, shipped map[string]int, sn *specNodes, broken map[brokenKey]Source, ps, ws *problems) {
	at := func(path ...any) Problem { return sn.at(r.Source, path...) }
	bad := func(path ...any) bool { return sn.badField(r.Source, path...) }
	// unsure: an entry of components was unusable, so what the release
	// ships is not known; the checks that a component is not shipped are
	// skipped.
	unsure := bad("components")
	clear(shipped)
	cvs := make([]*ComponentVersion, len(r.Components)) // resolved once
	for i, ref := range r.Components {
		if bad("components", i) {
			continue
		}
		if first, dup := shipped[ref.Name]; dup {
			ps.add(at("components", i, "name").with(fmt.Sprintf("release %s ships component %s twice (also at components[%d])", r.Version, ref.Name, first), "keep one entry per component"))
			continue
		}
		shipped[ref.Name] = i
		cv, ok := c.Component(ref.Name, ref.Version)
		cvs[i] = cv
		if !ok {
			if src, ok := broken[brokenKey{KindComponentVersion, ref.Name, ref.Version.Canonical()}]; ok {
				ps.add(at("components", i, "version").with(
					fmt.Sprintf("release %s ships %s %s, whose ComponentVersion (%s) is invalid", r.Version, ref.Name, ref.Version, src),
					"fix the problems reported there"))
				continue
			}
			fix := knownVersions(c, ref.Name)
			if sn != nil && len(sn.hidden) > 0 {
				fix = fmt.Sprintf("fix the YAML syntax error at %s first: the document it hides may be that ComponentVersion; else %s", sn.hidden[0], fix)
			}
			ps.add(at("components", i, "version").with(
				fmt.Sprintf("release %s ships %s %s, but no ComponentVersion %s %s exists", r.Version, ref.Name, ref.Version, ref.Name, ref.Version),
				fix))
		}
	}
	for i, ref := range r.Components {
		cv := cvs[i]
		if cv == nil || shipped[ref.Name] != i {
			continue
		}
		for k, d := range cv.Dependencies {
			if _, ok := shipped[d]; !ok && d != cv.Name && d != "" && !unsure {
				where := ""
				if dep := sn.at(cv.Source, "dependencies", k); dep.File != "" {
					where = " (" + Source{dep.File, dep.Line}.String() + ")"
				}
				ps.add(at("components", i).with(
					fmt.Sprintf("component %s %s depends on %s, which release %s does not ship", cv.Name, cv.Version, d, r.Version),
					fmt.Sprintf("add %s to the release's components, or remove it from the dependencies of %s %s%s", d, cv.Name, cv.Version, where)))
			}
		}
	}
	for i, cc := range r.Compatibility {
		if unsure || bad("compatibility", i) {
			continue // a check of zero values, or of what may be shipped
		}
		if _, ok := shipped[cc.Component]; !ok {
			if cc.Component == "" {
				ps.add(at("compatibility", i, "component").with("compatibility rule has no component", "name the component the rule applies to"))
			} else {
				ps.add(at("compatibility", i, "component").with(
					fmt.Sprintf("compatibility rule on %s, which release %s does not ship", cc.Component, r.Version),
					fixName(cc.Component, sortedKeys(shipped), "name a component the release ships")))
			}
			continue
		}
		j, ok := shipped[cc.Requires]
		switch {
		case !ok:
			ps.add(at("compatibility", i, "requires").with(
				fmt.Sprintf("%s requires %s %s, which release %s does not ship", cc.Component, cc.Requires, cc.Versions, r.Version),
				fmt.Sprintf("add %s to the release's components", cc.Requires)))
		case cc.Versions.IsZero():
			ps.add(at("compatibility", i).with("compatibility rule has no versions", "set versions to a range, e.g. \">= v1.34.0, < v1.35.0\""))
		case !cc.Versions.Check(r.Components[j].Version):
			ps.add(at("compatibility", i, "versions").with(
				fmt.Sprintf("%s requires %s %s, but release %s ships %s %s", cc.Component, cc.Requires, cc.Versions, r.Version, cc.Requires, r.Components[j].Version),
				fmt.Sprintf("ship a version of %s that satisfies %s, or change the rule", cc.Requires, cc.Versions)))
		}
	}
	for _, t := range sortedKeys(r.Supports) {
		switch {
		case bad("supports", t):
			// reported already
		case t == r.Track:
			ps.add(at("supports", t).with(fmt.Sprintf("release %s supports its own track %s", r.Version, quote(t)),
				"remove it: supports names the versions of the other tracks that may run beside the release; its own track moves by UpgradePath rules"))
		case !tracks[t]:
			ps.add(at("supports", t).with(fmt.Sprintf("track %s has no releases in the catalog", quote(t)), "name an existing track, or add its releases"))
		case !sup.any(t, r.Supports[t]):
			// A warning: the release is in no state, and no route enters
			// it, until the catalog has a release the range admits.
			ws.add(at("supports", t).with(
				fmt.Sprintf("%s admits no release of track %s in the catalog: release %s can run beside none", quote(r.Supports[t].String()), t, r.Version),
				"widen the range to the versions it runs beside, or add their releases; "+knownReleases(c, t)))
		}
	}
}

// listedVersion is the first entry of an UpgradePath's versions that names
// a version of a track.
type listedVersion struct {
	vi  *VersionInfo
	src Source // the UpgradePath
	i   int    // its index in versions
}

func validatePath(c *Catalog, p *UpgradePath, sn *specNodes, broken map[brokenKey]Source, listed map[trackKey]listedVersion, ps, ws *problems) {
	at := func(path ...any) Problem { return sn.at(p.Source, path...) }
	bad := func(path ...any) bool { return sn.badField(p.Source, path...) }
	for i, r := range p.Rules {
		validateRule(c, p, i, r, sn, broken, ps, ws)
	}
	validateEmptyPath(c, p, at, bad, ps)
	for i, vi := range p.Versions {
		if bad("versions", i, "version") {
			continue // of an unusable version, nothing can be checked
		}
		if vi.Version.IsZero() {
			ps.add(at("versions", i).with("entry has no version", "set version"))
		} else if _, ok := c.ReleaseOn(p.Track, vi.Version); !ok {
			ps.add(at("versions", i, "version").with(fmt.Sprintf("version %s has no release%s", vi.Version, onTrack(p.Track)), knownReleases(c, p.Track)))
		}
		validateChannels(vi, func(j int) Problem { return at("versions", i, "channels", j) }, func(j int) bool { return bad("versions", i, "channels", j) }, ps)
		if vi.Version.IsZero() {
			continue
		}
		k := trackKey{p.Track, vi.Version.Canonical()}
		first, dup := listed[k]
		if !dup {
			listed[k] = listedVersion{&p.Versions[i], p.Source, i}
			continue
		}
		if bad("versions", i) || sn.badField(first.src, "versions", first.i) {
			continue // a flag left zero is not the flag written
		}
		if first.vi.IsInstallable() != vi.IsInstallable() || first.vi.Deprecated != vi.Deprecated {
			ps.add(at("versions", i, "version").with(
				fmt.Sprintf("version %s is listed twice with different flags%s%s", vi.Version, sameSpelling(first.vi.Version, vi.Version), firstAt(sn.at(first.src, "versions", first.i, "version"))),
				"list each version once, with the flags it should have"))
		}
	}
}

// validateRule checks r, the i-th rule of p.
func validateRule(c *Catalog, p *UpgradePath, i int, r Rule, sn *specNodes, broken map[brokenKey]Source, ps, ws *problems) {
	// Closures of their own, not validatePath's passed in: calls of a
	// known closure do not move their variadic paths to the heap.
	at := func(path ...any) Problem { return sn.at(p.Source, path...) }
	bad := func(path ...any) bool { return sn.badField(p.Source, path...) }
	if r.OnFailure != "" && r.OnFailure != OnFailureRollback {
		ps.add(at("rules", i, "onFailure").with(fmt.Sprintf("onFailure must be %q or unset, got %s", OnFailureRollback, quote(r.OnFailure)), "write onFailure: rollback, or remove it to use the executor's failure policy"))
	}
	if bad("rules", i, "from") {
		// reported already
	} else if r.From.IsZero() {
		ps.add(at("rules", i).with("rule has no from", "set from to a version or a range, e.g. \">= v26.06-rc.1, < v26.06\""))
	} else if from, exact := r.From.Exact(); exact {
		if src, ok := broken[brokenKey{KindRelease, p.Track, from.Canonical()}]; ok {
			ps.add(at("rules", i, "from").with(fmt.Sprintf("rule upgrades from %s, whose Release (%s) is invalid", from, src), "fix the problems reported there"))
		} else if _, ok := c.ReleaseOn(p.Track, from); !ok {
			ps.add(at("rules", i, "from").with(fmt.Sprintf("rule upgrades from %s, which has no release%s", from, onTrack(p.Track)),
				knownReleases(c, p.Track)+"; or make from a range, which may name versions without releases"))
		}
	}
	if bad("rules", i, "to") {
		// reported already
	} else if r.To.IsZero() {
		ps.add(at("rules", i).with("rule has no to", "set to to the version the rule upgrades to"))
	} else if src, ok := broken[brokenKey{KindRelease, p.Track, r.To.Canonical()}]; ok {
		ps.add(at("rules", i, "to").with(fmt.Sprintf("rule upgrades to %s, whose Release (%s) is invalid", r.To, src), "fix the problems reported there"))
	} else if _, ok := c.ReleaseOn(p.Track, r.To); !ok {
		ps.add(at("rules", i, "to").with(fmt.Sprintf("rule upgrades to %s, which has no release%s", r.To, onTrack(p.Track)), knownReleases(c, p.Track)))
	}
	validateRuleRange(r, func(path ...any) Problem { return at(append([]any{"rules", i}, path...)...) }, func(key string) bool { return bad("rules", i, key) }, ws)
	names := map[string]bool{}
	for j, risk := range r.Risks {
		if bad("rules", i, "risks", j, "name") {
			continue
		}
		if risk.Name == "" {
			ps.add(at("rules", i, "risks", j).with("risk has no name", "name it: callers accept risks by name"))
		} else if names[risk.Name] {
			ps.add(at("rules", i, "risks", j, "name").with(fmt.Sprintf("risk %s is listed twice", risk.Name), "remove one of them"))
		}
		names[risk.Name] = true
	}
	for _, list := range []struct {
		key    string
		checks []Check
	}{{"preChecks", r.PreChecks}, {"postChecks", r.PostChecks}} {
		for j, ch := range list.checks {
			if ch.Name == "" && !bad("rules", i, list.key, j, "name") {
				ps.add(at("rules", i, list.key, j).with("check has no name", "name the registered check to run"))
			}
		}
	}
}

// fixName suggests the name of names closest to name (a typo), or lists
// them after what.
func fixName(name string, names []string, what string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := yamldoc.EditDistance(strings.ToLower(name), strings.ToLower(n)); d < bestDist && d < len(n)/2 && len(name) < 64 {
			best, bestDist = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %s?", best)
	}
	if len(names) == 0 {
		return what
	}
	if len(names) > 10 {
		names = append(names[:10:10], "...")
	}
	return what + ": " + strings.Join(names, ", ")
}

func knownVersions(c *Catalog, name string) string {
	var vs []string
	for i := range c.Components {
		if c.Components[i].Name == name && (len(vs) == 0 || vs[len(vs)-1] != c.Components[i].Version.Original()) {
			vs = append(vs, c.Components[i].Version.Original()) // sorted, so duplicates are neighbours
		}
	}
	if len(vs) == 0 {
		return fmt.Sprintf("the catalog has no ComponentVersion named %s; add one", name)
	}
	return fmt.Sprintf("known versions of %s: %s", name, strings.Join(vs, ", "))
}

func knownReleases(c *Catalog, track string) string {
	var vs []string
	for _, v := range c.TrackVersions(track) {
		vs = append(vs, v.Original())
	}
	if len(vs) == 0 {
		return "add a Release document for it"
	}
	return "known releases: " + strings.Join(vs, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
