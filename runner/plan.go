package runner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopdag/hopdag/dag"
	"github.com/hopdag/hopdag/internal/english"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
)

// Plan is what Execute runs: the route's hops in order and, per hop, the
// graph of the components that change. A plan is data: String, MarshalJSON
// and MarshalYAML show it before anything runs (the dry run).
type Plan struct {
	Route *path.Route
	Hops  []*HopPlan
	// Catalog says which catalog bundle the plan was made from (set by the
	// caller; empty for a directory). It is shown in the dry run.
	Catalog record.CatalogSource
}

// HopPlan is one hop of a plan.
type HopPlan struct {
	path.Hop
	// Graph holds the components that change on this hop.
	Graph *dag.Graph
	// step is the HOP of the hop's step names when it is not the hop's
	// target version: TRACK=VERSION, when another hop of the plan goes
	// to a version spelled alike (see StepName).
	step string
}

// PlanOption configures NewPlan.
type PlanOption func(*planOptions)

type planOptions struct {
	path []path.Option
	dag  []dag.Option
	exec *Executor
}

// PathOptions passes options (accepted risks, guards, a channel) to
// path.Resolve.
func PathOptions(opts ...path.Option) PlanOption {
	return func(o *planOptions) { o.path = append(o.path, opts...) }
}

// DAGOptions passes options (e.g. dag.IncludeUnchanged) to dag.Build.
func DAGOptions(opts ...dag.Option) PlanOption {
	return func(o *planOptions) { o.dag = append(o.dag, opts...) }
}

// ForExecutor makes NewPlan fail unless e can run the plan: its runner
// accepts every component (when it implements Validator) and every hop
// check is registered with WithCheck.
func ForExecutor(e *Executor) PlanOption {
	return func(o *planOptions) { o.exec = e }
}

// NewPlan resolves the route from the current state to the target state
// (path.Resolve: a version is the state of a one-track system, "v26.09";
// across tracks, "platform=27.03.0,kubernetes=v1.34.1") and builds each
// hop's graph: the components of the releases of the track the hop moves.
// Everything knowable before running fails here: no route (path's
// errors), a cycle or a missing dependency (dag's errors), and with
// ForExecutor a component or check nothing can run. A state holds one
// version of each component: a route across tracks whose tracks'
// releases ship the same component is refused (ErrInvalidPlan).
func NewPlan(c *release.Catalog, current, target path.State, opts ...PlanOption) (*Plan, error) {
	var o planOptions
	for _, opt := range opts {
		opt(&o)
	}
	route, err := path.Resolve(c, current, target, o.path...)
	if err != nil {
		return nil, err
	}
	return planRoute(c, route, o)
}

func planRoute(c *release.Catalog, route *path.Route, o planOptions) (*Plan, error) {
	if err := sharedAcrossTracks(c, route); err != nil {
		return nil, err
	}
	p := &Plan{Route: route}
	for i, h := range route.Hops {
		track := route.Track
		if h.Track != "" {
			track = h.Track
		}
		from, ok1 := c.ReleaseOn(track, h.From)
		to, ok2 := c.ReleaseOn(track, h.To)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: hop %d %s -> %s: release missing from catalog", ErrInvalidPlan, i+1, h.From, h.To)
		}
		g, err := dag.Build(c, from, to, o.dag...)
		if err != nil {
			return nil, fmt.Errorf("runner: hop %d %s -> %s: %w", i+1, h.From, h.To, err)
		}
		p.Hops = append(p.Hops, &HopPlan{Hop: h, Graph: g})
	}
	qualifySteps(p.Hops)
	if o.exec != nil {
		if err := o.exec.Validate(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// sharedAcrossTracks refuses a route across tracks that enters a state
// whose tracks' releases ship the same component: a state holds one
// version of each component, and each track's hops would upgrade it from
// the version its own release names (the second hop from a version the
// system no longer runs, maybe back down). Tracks used one at a time (a
// one-track state) may ship the same components: no state holds two.
func sharedAcrossTracks(c *release.Catalog, route *path.Route) error {
	if route == nil || route.FromState == nil {
		return nil
	}
	type owner struct {
		track string
		rel   *release.Release
	}
	reported := map[[3]string]bool{}
	var problems []string
	for _, st := range route.States() {
		owners := map[string]owner{}
		for _, t := range st.Tracks() {
			r, ok := c.ReleaseOn(t, st[t])
			if !ok {
				continue // planRoute reports a missing release of a hop
			}
			for _, ref := range r.Components {
				o, dup := owners[ref.Name]
				if !dup {
					owners[ref.Name] = owner{t, r}
					continue
				}
				if k := [3]string{ref.Name, o.track, t}; !reported[k] {
					reported[k] = true
					problems = append(problems, fmt.Sprintf("component %s is shipped on two tracks: by %s %s%s and by %s %s%s, and the state %s runs both",
						ref.Name, o.track, o.rel.Version, at(o.rel.Source), t, r.Version, at(r.Source), st))
				}
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("%w: %s; a state holds one version of each component and each track's hops upgrade their own: ship it on one track (or give the two components distinct names)", ErrInvalidPlan, strings.Join(problems, "; "))
}

// at is " (file:line)" of src, or "" for a value built in code.
func at(src release.Source) string {
	if src.File == "" {
		return ""
	}
	return " (" + src.String() + ")"
}

// Total is the number of component upgrades over all hops.
func (p *Plan) Total() int {
	n := 0
	for _, h := range p.Hops {
		n += h.Graph.Len()
	}
	return n
}

// Name is "from -> to" of the hop.
func (h *HopPlan) Name() string { return h.From.Original() + " -> " + h.To.Original() }

// Batches are the graph's Kahn levels by component name.
func (h *HopPlan) Batches() [][]string {
	var out [][]string
	for _, level := range h.Graph.Levels() {
		names := make([]string, len(level))
		for i, n := range level {
			names[i] = h.Graph.Node(n).Name
		}
		out = append(out, names)
	}
	return out
}

// CriticalPath is the longest chain by expected duration and its length:
// the hop cannot finish sooner with any parallelism.
func (h *HopPlan) CriticalPath() ([]string, time.Duration) {
	idx, d := h.Graph.CriticalPath()
	names := make([]string, len(idx))
	for i, n := range idx {
		names[i] = h.Graph.Node(n).Name
	}
	return names, d
}

// Work is the sum of the expected durations: the hop's length run serially.
func (h *HopPlan) Work() time.Duration {
	var d time.Duration
	for i := 0; i < h.Graph.Len(); i++ {
		d += h.Graph.Node(i).Duration
	}
	return d
}

// planView is the serialised dry run.
type planView struct {
	Track            string                `json:"track,omitempty" yaml:"track,omitempty"`
	Catalog          *record.CatalogSource `json:"catalog,omitempty" yaml:"catalog,omitempty"`
	From             string                `json:"from" yaml:"from"`
	To               string                `json:"to" yaml:"to"`
	Components       int                   `json:"components" yaml:"components"`
	ExpectedDuration release.Duration      `json:"expectedDuration" yaml:"expectedDuration"`
	Hops             []hopView             `json:"hops" yaml:"hops"`
}

type hopView struct {
	Track            string           `json:"track,omitempty" yaml:"track,omitempty"`
	From             string           `json:"from" yaml:"from"`
	To               string           `json:"to" yaml:"to"`
	Deprecated       string           `json:"deprecated,omitempty" yaml:"deprecated,omitempty"`
	ToDeprecated     string           `json:"toDeprecated,omitempty" yaml:"toDeprecated,omitempty"`
	Why              string           `json:"why,omitempty" yaml:"why,omitempty"`
	Risks            []release.Risk   `json:"risks,omitempty" yaml:"risks,omitempty"`
	Overrides        []string         `json:"overrides,omitempty" yaml:"overrides,omitempty"`
	PreChecks        []release.Check  `json:"preChecks,omitempty" yaml:"preChecks,omitempty"`
	PostChecks       []release.Check  `json:"postChecks,omitempty" yaml:"postChecks,omitempty"`
	Batches          [][]string       `json:"batches" yaml:"batches"`
	CriticalPath     []string         `json:"criticalPath" yaml:"criticalPath"`
	ExpectedDuration release.Duration `json:"expectedDuration" yaml:"expectedDuration"`
	Work             release.Duration `json:"work" yaml:"work"`
	Components       []componentView  `json:"components" yaml:"components"`
	Removed          []string         `json:"removed,omitempty" yaml:"removed,omitempty"`
}

type componentView struct {
	Name         string   `json:"name" yaml:"name"`
	Type         string   `json:"type,omitempty" yaml:"type,omitempty"`
	From         string   `json:"from,omitempty" yaml:"from,omitempty"`
	To           string   `json:"to,omitempty" yaml:"to,omitempty"`
	Dependencies []string `json:"dependencies,omitempty" yaml:"dependencies,omitempty"`
	Group        string   `json:"group,omitempty" yaml:"group,omitempty"`
}

func (p *Plan) view() planView {
	// Hops is never nil: a plan with no hops serialises "hops": [].
	v := planView{Track: p.Route.Track, From: p.Route.From.Original(), To: p.Route.To.Original(), Components: p.Total(), Hops: []hopView{}}
	if p.Route.FromState != nil {
		v.Track, v.From, v.To = "", p.Route.FromState.String(), p.Route.ToState.String()
	}
	var total time.Duration
	for _, h := range p.Hops {
		cp, d := h.CriticalPath()
		total += d
		hv := hopView{
			Track: h.Track, From: h.From.Original(), To: h.To.Original(), Deprecated: h.Deprecated, ToDeprecated: h.ToDeprecated, Why: h.Why, Risks: h.Risks,
			Overrides: h.Overrides, PreChecks: h.PreChecks, PostChecks: h.PostChecks,
			Batches: h.Batches(), CriticalPath: cp, ExpectedDuration: release.D(d), Work: release.D(h.Work()),
		}
		for i := 0; i < h.Graph.Len(); i++ {
			n := h.Graph.Node(i)
			cv := componentView{Name: n.Name, Dependencies: n.Deps}
			if n.From != nil {
				cv.From = n.From.Version.Original()
			}
			if n.To != nil {
				cv.To, cv.Type, cv.Group = n.To.Version.Original(), n.To.Type, n.To.Group
			}
			hv.Components = append(hv.Components, cv)
		}
		for _, r := range h.Graph.Removed() {
			hv.Removed = append(hv.Removed, r.Name+" "+r.Version.Original())
		}
		v.Hops = append(v.Hops, hv)
	}
	v.ExpectedDuration = release.D(total)
	if p.Catalog != (record.CatalogSource{}) {
		v.Catalog = &p.Catalog
	}
	return v
}

// MarshalJSON writes the dry run: hops, batches, critical paths, expected
// durations, risks and checks.
func (p *Plan) MarshalJSON() ([]byte, error) { return json.Marshal(p.view()) }

// MarshalYAML writes the same dry run as MarshalJSON.
func (p *Plan) MarshalYAML() (any, error) { return p.view(), nil }

// String is the dry run as text, one line per fact, deterministic.
func (p *Plan) String() string {
	v := p.view()
	var b strings.Builder
	// Durations are said only when a component declared one: "expected
	// 0s" would be a guess presented as a fact.
	fmt.Fprintf(&b, "plan %s -> %s: %d %s, %d %s%s\n", v.From, v.To, len(v.Hops), english.Plural(len(v.Hops), "hop"), v.Components, english.Plural(v.Components, "component"), expected(v.ExpectedDuration, ", expected %s"))
	if v.Catalog != nil {
		fmt.Fprintf(&b, "catalog: %s\n", v.Catalog)
	}
	for i, h := range v.Hops {
		if h.Track != "" {
			fmt.Fprintf(&b, "hop %d/%d %s %s -> %s: %d %s%s\n", i+1, len(v.Hops), h.Track, h.From, h.To, len(h.Components), english.Plural(len(h.Components), "component"), hopExpected(h.ExpectedDuration, h.Work))
		} else {
			fmt.Fprintf(&b, "hop %d/%d %s -> %s: %d %s%s\n", i+1, len(v.Hops), h.From, h.To, len(h.Components), english.Plural(len(h.Components), "component"), hopExpected(h.ExpectedDuration, h.Work))
		}
		if h.Deprecated != "" {
			fmt.Fprintf(&b, "  deprecated: %s\n", h.Deprecated)
		}
		if h.ToDeprecated != "" {
			fmt.Fprintf(&b, "  deprecated version %s: %s\n", h.To, h.ToDeprecated)
		}
		if h.Why != "" {
			fmt.Fprintf(&b, "  why: %s\n", h.Why)
		}
		for _, r := range h.Risks {
			fmt.Fprintf(&b, "  risk %s (accepted): %s%s\n", r.Name, r.Message, urlSuffix(r.URL))
		}
		for _, o := range h.Overrides {
			fmt.Fprintf(&b, "  guard overridden: %s\n", o)
		}
		writeChecks(&b, "pre-checks", h.PreChecks)
		for j, batch := range h.Batches {
			fmt.Fprintf(&b, "  batch %d: %s\n", j+1, strings.Join(batch, ", "))
		}
		fmt.Fprintf(&b, "  critical path: %s%s\n", strings.Join(h.CriticalPath, " -> "), expected(h.ExpectedDuration, " (%s)"))
		writeChecks(&b, "post-checks", h.PostChecks)
		if len(h.Removed) > 0 {
			fmt.Fprintf(&b, "  removed: %s\n", strings.Join(h.Removed, ", "))
		}
	}
	return b.String()
}

// expected is format with d, or "" when d is zero: no component declared
// an expected duration.
func expected(d release.Duration, format string) string {
	if d.Duration == 0 {
		return ""
	}
	return fmt.Sprintf(format, d)
}

// hopExpected is a hop's ", expected D (serial W)", or "" when no
// component of it declared an expected duration.
func hopExpected(d, work release.Duration) string {
	if work.Duration == 0 {
		return ""
	}
	return fmt.Sprintf(", expected %s (serial %s)", d, work)
}

func writeChecks(b *strings.Builder, label string, checks []release.Check) {
	if len(checks) == 0 {
		return
	}
	parts := make([]string, len(checks))
	for i, c := range checks {
		parts[i] = c.Name
		if c.Required {
			parts[i] += " (required)"
		}
	}
	fmt.Fprintf(b, "  %s: %s\n", label, strings.Join(parts, ", "))
}

func urlSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " <" + u + ">"
}

// withArticle is word after "a" or "an", as its first letter sounds
// ("an exec", "a manifest"); good enough for type names, which are
// lowercase words.
func withArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
