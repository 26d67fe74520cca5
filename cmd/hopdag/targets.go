package main

// targets lists the versions reachable from --from (targets.go), as a
// table or a Targets document.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/simulate"
)

func (c *cli) targets(context.Context) int {
	if code := c.outputIn("text", "json", "yaml"); code != exitOK {
		return code
	}
	cat, err := c.catalog()
	if err != nil {
		return c.fail1(err)
	}
	if err := c.checkAccept(cat); err != nil {
		return c.fail1(err)
	}
	from, _, err := c.states()
	if err != nil {
		return c.fail1(err)
	}
	list := func(opts []path.Option) ([]target, error) {
		ts, err := path.Targets(cat, from, opts...)
		if err != nil {
			return nil, err
		}
		out := make([]target, len(ts))
		for i, t := range ts {
			out[i] = target{track: t.Track, version: t.Version, hops: t.Hops, deprecated: t.Deprecated, next: t.Next, last: t.Last, route: t.Route}
		}
		return out, nil
	}
	rows, err := list(c.pathOptions())
	// Nothing reachable (from the newest version, say) is an answer.
	if nr, ok := errors.AsType[*path.NoRouteError](err); ok && nr.To.IsZero() && len(nr.ToState) == 0 {
		if *c.output != "text" {
			return c.printTargetsDoc(nil, list, from.String(), nil)
		}
		fmt.Fprintln(c.stdout, strings.TrimPrefix(message(err), "path: "))
		return exitOK
	}
	if err != nil {
		return c.fail1(err)
	}
	if *c.output != "text" {
		return c.printTargetsDoc(cat, list, from.String(), rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(c.stdout, "no version is reachable from %s\n", from)
		return exitOK
	}
	tracks := slices.ContainsFunc(rows, func(t target) bool { return t.track != "" })
	c.printTargets(rows, tracks)
	c.riskyTargets(cat, list, rows, tracks)
	return exitOK
}

// target is one row of hopdag targets: a version reachable from --from.
type target struct {
	// track is the track of version for --from a state, "" for one track.
	track      string
	version    release.Version
	hops       int
	deprecated int // deprecated edges and versions on the route
	// next and last are the route's first and last hops, route the whole
	// route (built only for --routes and the risks of a target behind
	// them).
	next, last func() *path.Hop
	route      func() *path.Route
}

// targetLister lists the targets reachable with opts.
type targetLister func(opts []path.Option) ([]target, error)

// printTargets writes the table of targets: with tracks, a TRACK column.
// NEXT is the first hop of each route, so the table grows linearly with the
// targets; with --routes, ROUTE is the whole route instead (on a long chain,
// quadratic), last so that no row is padded to the longest route. NOTE says
// why a target or its route is deprecated.
func (c *cli) printTargets(rows []target, tracks bool) {
	// A row without a note would end in the padding of its last cell;
	// trimWriter writes in small pieces, bufio in large ones.
	out := bufio.NewWriter(c.stdout)
	defer out.Flush()
	tw := tabwriter.NewWriter(&trimWriter{w: out}, 0, 0, 2, ' ', 0)
	col := ""
	if tracks {
		col = "TRACK\t"
	}
	if *c.routes {
		fmt.Fprintf(tw, "%sVERSION\tHOPS\tNOTE\tROUTE\n", col)
	} else {
		fmt.Fprintf(tw, "%sVERSION\tHOPS\tNEXT\tNOTE\n", col)
	}
	for _, t := range rows {
		if tracks {
			fmt.Fprintf(tw, "%s\t", t.track)
		}
		if *c.routes {
			r := t.route()
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", t.version.Original(), t.hops, deprecationNote(t, r.Hops), routeCell(t, r, tracks))
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", t.version.Original(), t.hops, routeCell(t, nil, tracks), deprecationNote(t, nil))
		}
	}
	tw.Flush()
}

// routeCell is the NEXT cell (the first hop: "[track ]FROM -> TO") or, given
// the whole route r (--routes), the ROUTE cell.
func routeCell(t target, r *path.Route, tracks bool) string {
	if r == nil {
		h := t.next()
		if tracks {
			return h.Track + " " + h.From.Original() + " -> " + h.To.Original()
		}
		return h.From.Original() + " -> " + h.To.Original()
	}
	steps := []string{r.From.Original()}
	if r.FromState != nil {
		steps[0] = r.FromState.String()
	}
	for _, h := range r.Hops {
		if tracks {
			steps = append(steps, h.Track+" "+h.To.Original())
		} else {
			steps = append(steps, h.To.Original())
		}
	}
	return strings.Join(steps, " -> ")
}

// trimWriter drops the spaces that end a line, as it streams to w.
type trimWriter struct {
	w      io.Writer
	spaces int // held back: they end the line, or come before more text
}

func (t *trimWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, " \n")
		if i < 0 {
			i = len(p)
		}
		if i > 0 {
			if err := t.text(p[:i]); err != nil {
				return 0, err
			}
		}
		if i == len(p) {
			break
		}
		if p[i] == '\n' {
			t.spaces = 0
			if _, err := t.w.Write(p[i : i+1]); err != nil {
				return 0, err
			}
			p = p[i+1:]
			continue
		}
		j := i
		for j < len(p) && p[j] == ' ' {
			j++
		}
		t.spaces += j - i
		p = p[j:]
	}
	return n, nil
}

// text writes the held-back spaces, then b.
func (t *trimWriter) text(b []byte) error {
	if t.spaces > 0 {
		if _, err := io.WriteString(t.w, strings.Repeat(" ", t.spaces)); err != nil {
			return err
		}
		t.spaces = 0
	}
	_, err := t.w.Write(b)
	return err
}

// deprecationNote says why a target or its route is deprecated; "" for a
// clean target. With the whole route (hops, --routes): each deprecated edge
// and version it passes through. Without: those of the next and last hops,
// and how many more the route passes through.
func deprecationNote(t target, hops []path.Hop) string {
	if t.deprecated == 0 {
		return ""
	}
	whole := hops != nil
	if !whole {
		if n, l := t.next(), t.last(); t.hops == 1 {
			hops = []path.Hop{*l}
		} else {
			hops = []path.Hop{*n, *l}
		}
	}
	var notes []string
	shown := 0
	for i, h := range hops {
		if i == len(hops)-1 && !whole && len(hops) == 2 && t.hops > 2 {
			notes = append(notes, "")
		}
		if h.Deprecated != "" {
			notes = append(notes, fmt.Sprintf("edge %s -> %s deprecated: %q", h.From.Original(), h.To.Original(), h.Deprecated))
			shown++
		}
		if h.ToDeprecated == "" {
			continue
		}
		shown++
		if i == len(hops)-1 {
			notes = append(notes, fmt.Sprintf("deprecated: %q", h.ToDeprecated))
		} else {
			notes = append(notes, fmt.Sprintf("via deprecated %s: %q", h.To.Original(), h.ToDeprecated))
		}
	}
	// The placeholder between the next and the last hop says what the
	// hops between them hold.
	for i, n := range notes {
		if n != "" {
			continue
		}
		if more := t.deprecated - shown; more > 0 {
			notes[i] = fmt.Sprintf("%d more deprecated on the route (--routes shows them)", more)
		} else {
			notes = slices.Delete(notes, i, i+1)
		}
		break
	}
	return strings.Join(notes, "; ")
}

// riskyTargets prints the versions reachable only by accepting risks (the
// ClusterVersion's conditionalUpdates), each with the risks its route
// would take (behindRisks). One-track and state targets both print it;
// with tracks, a TRACK column.
func (c *cli) riskyTargets(cat *release.Catalog, list targetLister, rows []target, tracks bool) {
	risky := c.behindRisks(cat, list, rows)
	if len(risky) == 0 {
		return
	}
	fmt.Fprintln(c.stdout, "\nBehind risks (plan them with --accept NAME,...):")
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	if tracks {
		fmt.Fprintln(tw, "TRACK\tVERSION\tHOPS\tRISKS")
	} else {
		fmt.Fprintln(tw, "VERSION\tHOPS\tRISKS")
	}
	for _, t := range risky {
		if tracks {
			fmt.Fprintf(tw, "%s\t", t.Track)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", t.Version, t.Hops, strings.Join(t.Risks, ", "))
	}
	tw.Flush()
}

// riskyTarget is a version reachable only by accepting Risks.
type riskyTarget struct {
	Track   string   `json:"track,omitempty"`
	Version string   `json:"version"`
	Hops    int      `json:"hops"`
	Risks   []string `json:"risks"`
}

// behindRisks are the versions the targets list gives when it accepts
// every risk of the catalog, less those reachable as the flags stand
// (rows), each with the risks not accepted yet that its route takes.
func (c *cli) behindRisks(cat *release.Catalog, list targetLister, rows []target) []riskyTarget {
	accepted := simulate.List(*c.accept)
	var all []string
	for _, p := range cat.Paths {
		for _, r := range p.Rules {
			for _, risk := range r.Risks {
				if !slices.Contains(all, risk.Name) && !slices.Contains(accepted, risk.Name) {
					all = append(all, risk.Name)
				}
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	more, err := list(append(c.pathOptions(), path.AcceptRisks(all...)))
	if err != nil {
		return nil
	}
	reachable := map[string]bool{}
	for _, t := range rows {
		reachable[t.track+"="+t.version.Canonical()] = true
	}
	var out []riskyTarget
	for _, t := range more {
		if reachable[t.track+"="+t.version.Canonical()] {
			continue
		}
		var risks []string
		for _, h := range t.route().Hops {
			for _, r := range h.Risks {
				if !slices.Contains(accepted, r.Name) && !slices.Contains(risks, r.Name) {
					risks = append(risks, r.Name)
				}
			}
		}
		out = append(out, riskyTarget{Track: t.track, Version: t.version.String(), Hops: t.hops, Risks: risks})
	}
	return out
}

// targetsDoc is targets' document (-o json|yaml, kind Targets).
type targetsDoc struct {
	From    string        `json:"from"`
	Targets []targetEntry `json:"targets"`
	// BehindRisks are the versions reachable only by accepting risks.
	BehindRisks []riskyTarget `json:"behindRisks"`
}

// targetEntry is one reachable version: its route's hop count, first hop
// (Next) or, with --routes, every hop (Route), and why it or its route is
// deprecated (Note).
type targetEntry struct {
	Track   string      `json:"track,omitempty"`
	Version string      `json:"version"`
	Hops    int         `json:"hops"`
	Next    *routeStep  `json:"next,omitempty"`
	Route   []routeStep `json:"route,omitempty"`
	Note    string      `json:"note,omitempty"`
}

// routeStep is a hop of a route: its track (across tracks), from, to.
type routeStep struct {
	Track string `json:"track,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
}

func stepOf(h path.Hop) routeStep {
	return routeStep{Track: h.Track, From: h.From.Original(), To: h.To.Original()}
}

// printTargetsDoc writes the Targets document of rows from --from.
func (c *cli) printTargetsDoc(cat *release.Catalog, list targetLister, from string, rows []target) int {
	doc := targetsDoc{From: from, Targets: []targetEntry{}, BehindRisks: []riskyTarget{}}
	for _, t := range rows {
		e := targetEntry{Track: t.track, Version: t.version.Original(), Hops: t.hops}
		if *c.routes {
			r := t.route()
			for _, h := range r.Hops {
				e.Route = append(e.Route, stepOf(h))
			}
			e.Note = deprecationNote(t, r.Hops)
		} else {
			s := stepOf(*t.next())
			e.Next, e.Note = &s, deprecationNote(t, nil)
		}
		doc.Targets = append(doc.Targets, e)
	}
	if cat != nil {
		doc.BehindRisks = append(doc.BehindRisks, c.behindRisks(cat, list, rows)...)
	}
	if err := c.print(kindTargets, doc); err != nil {
		return c.fail1(err)
	}
	return exitOK
}
