package model

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A net/http.ServeMux wildcard fills a whole path segment, while an OpenAPI
// path template may put parameters and literals in one segment: GitHub's
// /repos/{owner}/{repo}/compare/{base}...{head}, or /files/{name}.json.
// Such a segment gets one wildcard, and the generated code splits its value
// by the literals (idemimpl.MatchPath) before anything else reads the
// request; a path whose segment lacks the literals is not the operation's
// and gets the 404 of any other unknown path. Operations whose paths differ
// only inside such segments (GET /files/{name}.json and GET
// /files/{name}.xml, or beside GET /files/{id}) share one ServeMux route,
// whose handler tries them from the most literal text to the least.

// pathSeg is one segment of an operation's path template.
type pathSeg struct {
	text   string   // as in the spec
	lits   []string // literals around the parameters: len(params)+1; the whole text when there are no parameters
	params []string // ServeMux-safe parameter names (Param.Key), in order
}

func (s *pathSeg) wholeParam() bool {
	return len(s.params) == 1 && s.lits[0] == "" && s.lits[1] == ""
}

// PathSegment is a segment whose wildcard value the generated code splits
// into parameters, or compares with a literal (see idemimpl.PathSegment).
type PathSegment struct {
	Wildcard string
	Literals []string
	Params   []string
}

// RouteGroup is one ServeMux route: one operation, or several whose paths
// differ only inside segments that hold parameters and literals.
type RouteGroup struct {
	Method  string
	Pattern string       // ServeMux pattern without method (and with {$} for a trailing /)
	Ops     []*Operation // in the order the dispatcher tries them
	// HandlerName is route<Op> (after the first operation) when the
	// route dispatches (Dispatch).
	HandlerName string
}

// Dispatch reports whether the route's handler must split path segments or
// choose between operations before an operation's handler runs.
func (g *RouteGroup) Dispatch() bool { return len(g.Ops) > 1 || len(g.Ops[0].Segments) > 0 }

// Handler is the handler method the route calls.
func (g *RouteGroup) Handler() string {
	if g.Dispatch() {
		return g.HandlerName
	}
	return g.Ops[0].Handler()
}

// OperationID names the route's operation, or its operations separated by
// commas.
func (g *RouteGroup) OperationID() string {
	ids := make([]string, len(g.Ops))
	for i, o := range g.Ops {
		ids[i] = o.ID
	}
	return strings.Join(ids, ",")
}

// PathPattern is Pattern without ServeMux's end anchor (see Operation.PathPattern).
func (g *RouteGroup) PathPattern() string { return strings.TrimSuffix(g.Pattern, "{$}") }

// Routes lists the ServeMux routes, in the order of the operations.
func (m *Model) Routes() []*RouteGroup { return m.RouteGroups }

// parsePath splits an operation's path template into segments; it reports
// a segment that cannot be matched (unbalanced braces, an empty name, two
// parameters with no literal between them) and returns ok false.
func (b *builder) parsePath(path, where string) (segs []pathSeg, ok bool) {
	for _, text := range strings.Split(path, "/") {
		s := pathSeg{text: text}
		rest, lit := text, ""
		for rest != "" {
			i := strings.IndexAny(rest, "{}")
			if i < 0 {
				lit += rest
				break
			}
			if rest[i] == '}' {
				b.errs.addf("%spath segment %q: '}' without '{'", where, text)
				return nil, false
			}
			j := strings.IndexAny(rest[i+1:], "{}")
			if j < 0 || rest[i+1+j] == '{' {
				b.errs.addf("%spath segment %q: '{' without '}'", where, text)
				return nil, false
			}
			name := rest[i+1 : i+1+j]
			if name == "" {
				b.errs.addf("%spath segment %q: a parameter without a name ({})", where, text)
				return nil, false
			}
			lit += rest[:i]
			if len(s.params) > 0 && lit == "" {
				b.errs.addf("%spath segment %q: parameters %q and %q have no literal between them, so no path can be split between them; put one between them (such as - or .)",
					where, text, s.params[len(s.params)-1], muxWildcard(name))
				return nil, false
			}
			s.lits = append(s.lits, lit)
			s.params = append(s.params, muxWildcard(name))
			lit, rest = "", rest[i+2+j:]
		}
		s.lits = append(s.lits, lit)
		segs = append(segs, s)
	}
	return segs, true
}

// pattern is the ServeMux pattern of segs with wildcard names wild (by
// segment index) for segments holding parameters.
func pattern(segs []pathSeg, wild map[int]string) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		if len(s.params) == 0 {
			parts[i] = s.lits[0]
		} else {
			parts[i] = "{" + wild[i] + "}"
		}
	}
	p := strings.Join(parts, "/")
	if strings.HasSuffix(p, "/") {
		p += "{$}"
	}
	return p
}

// shape is a route's ServeMux pattern without names: per segment, a
// literal or a wildcard.
type shape []shapeSeg

type shapeSeg struct {
	lit  string
	wild bool
}

func shapeOf(segs []pathSeg) shape {
	sh := make(shape, len(segs))
	for i, s := range segs {
		if len(s.params) > 0 {
			sh[i] = shapeSeg{wild: true}
		} else {
			sh[i] = shapeSeg{lit: s.lits[0]}
		}
	}
	return sh
}

func (a shape) String() string {
	parts := make([]string, len(a))
	for i, s := range a {
		if s.wild {
			parts[i] = "{}"
		} else {
			parts[i] = s.lit
		}
	}
	return strings.Join(parts, "/")
}

// covers reports whether every path a matches, b matches too: b has a's
// literal wherever b has one (the same number of segments assumed).
func (a shape) coveredBy(b shape) bool {
	for i := range a {
		if !b[i].wild && (a[i].wild || a[i].lit != b[i].lit) {
			return false
		}
	}
	return true
}

// conflicts reports whether ServeMux refuses to register both a and b: some
// path matches both, and neither is more specific (or they are the same).
func (a shape) conflicts(b shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].wild && !b[i].wild && a[i].lit != b[i].lit {
			return false // no path matches both
		}
	}
	ab, ba := a.coveredBy(b), b.coveredBy(a)
	return ab == ba // both: the same pattern; neither: overlapping, unordered
}

// merge is the narrowest shape covering a and b.
func (a shape) merge(b shape) shape {
	out := make(shape, len(a))
	for i := range a {
		if a[i].wild || b[i].wild || a[i].lit != b[i].lit {
			out[i] = shapeSeg{wild: true}
		} else {
			out[i] = a[i]
		}
	}
	return out
}

// literalShape is what tells operations of one route apart.
func literalShape(segs []pathSeg) string {
	var out strings.Builder
	for _, s := range segs {
		out.WriteString(strconv.Quote(strings.Join(s.lits, "{}")))
		out.WriteByte('/')
	}
	return out.String()
}

// before orders the operations of one route as its handler tries them:
// from the first segment on, a literal segment before one with parameters,
// then more literal text within a segment before less ("{name}.tar.gz"
// before "{name}.gz" before "{id}"), as routers that prefer static segments
// do; a tie keeps the operations' order.
func before(a, b []pathSeg) bool {
	for i := range a {
		x, y := a[i], b[i]
		xw, yw := len(x.params) > 0, len(y.params) > 0
		if xw != yw {
			return !xw
		}
		if xw {
			if lx, ly := len(strings.Join(x.lits, "")), len(strings.Join(y.lits, "")); lx != ly {
				return lx > ly
			}
		}
	}
	return false
}

// route is a RouteGroup while the routes are formed.
type route struct {
	g     *RouteGroup
	shape shape
	bl    *builder
}

// checkRoutes groups the operations into ServeMux routes, names the
// wildcards of each route and the segments each operation splits, and
// refuses two operations that no path can tell apart. Operations whose
// patterns ServeMux would refuse together share a route: those whose paths
// differ only inside segments (/files/{name}.json, /files/{id}), and those
// whose patterns overlap with neither more specific (GitHub's
// /orgs/{org}/rulesets/{ruleset_id}/history and
// /orgs/{org}/rulesets/rule-suites/{rule_suite_id}), under a pattern that
// covers them all.
func (b *builder) checkRoutes(ops []*Operation) {
	groups := map[string]*route{}
	var routes []*route
	for _, o := range ops {
		sh := shapeOf(b.ob(o).segs)
		key := o.Method + " " + sh.String()
		rt := groups[key]
		if rt == nil {
			rt = &route{g: &RouteGroup{Method: o.Method}, shape: sh, bl: b}
			groups[key] = rt
			routes = append(routes, rt)
		}
		dup := false
		for _, prev := range rt.g.Ops {
			if literalShape(b.ob(prev).segs) == literalShape(b.ob(o).segs) {
				b.errs.addf("%s: operations %q (%s %s) and %q (%s %s) have the same route", b.file, prev.ID, prev.Method, prev.Path, o.ID, o.Method, o.Path)
				dup = true
				break
			}
		}
		if !dup {
			rt.g.Ops = append(rt.g.Ops, o)
		}
	}
	// Merge routes ServeMux would refuse together until none are left; a
	// merged pattern is wider and may meet another.
	// Also merged: a route whose operation some path would reach through
	// another, more specific route (see shadows).
	for merged := true; merged; {
		routes, merged = mergeRoutes(routes, shadows)
	}
	byOp := map[*Operation]*RouteGroup{}
	for _, rt := range routes {
		for _, o := range rt.g.Ops {
			byOp[o] = rt.g
		}
		b.nameRoute(rt.g, rt.shape)
		if o := rt.g.Ops[0]; rt.g.Dispatch() {
			b.names.affixed(b.handlerMethods, &rt.g.HandlerName, b.ob(o).ident, "route", "", o.Location, fmt.Sprintf("route %s %s", rt.g.Method, rt.g.Pattern))
		}
	}
	seen := map[*RouteGroup]bool{}
	for _, o := range ops {
		if g := byOp[o]; g != nil && !seen[g] {
			seen[g] = true
			b.routes = append(b.routes, g)
		}
	}
}

// mergeRoutes merges, in one pass, every route into the first one it must
// join (must is symmetric); merged reports whether any did.
func mergeRoutes(routes []*route, must func(a, b *route) bool) (out []*route, merged bool) {
	byLen := map[string][]*route{}
	for _, rt := range routes {
		k := rt.g.Method + " " + strconv.Itoa(len(rt.shape))
		byLen[k] = append(byLen[k], rt)
	}
	gone, done := map[*route]bool{}, map[*route]bool{}
	for _, rt := range routes {
		if gone[rt] {
			continue
		}
		for _, other := range byLen[rt.g.Method+" "+strconv.Itoa(len(rt.shape))] {
			// One kept already is met on the next pass, from its side.
			if other == rt || gone[other] || done[other] || !must(rt, other) {
				continue
			}
			rt.shape = rt.shape.merge(other.shape)
			rt.g.Ops = append(rt.g.Ops, other.g.Ops...)
			gone[other] = true
			merged = true
		}
		out = append(out, rt)
		done[rt] = true
	}
	return out, merged
}

// shadows reports whether routes a and b (of one method and length) must be
// one route: ServeMux refuses their patterns together, or for every path to reach the operation that comes first for it
// (before: the path template with a literal in the first segment where they
// differ). ServeMux sends a path both patterns match to the more specific
// pattern, so an operation of one route and an operation of the other that
// some path matches must be ordered as their routes are: the operation
// covered by the other (more literal) in the route whose pattern the other
// route's covers. Operations that overlap with neither covering the other
// (/x/{a}/d beside /x/b/{y}, of a route merged to /x/{}/{}) must share a
// route, where the dispatcher tries them in order.
func shadows(a, b *route) bool {
	if a.shape.conflicts(b.shape) {
		return true
	}
	aInB, bInA := a.shape.coveredBy(b.shape), b.shape.coveredBy(a.shape)
	if !a.shape.overlaps(b.shape) {
		return false
	}
	// The narrower route answers 404 for a path its operations do not
	// match; an operation of the wider route that the path matches would
	// never see it.
	if aInB && a.fallsThrough() && b.reaches(a.shape) || bInA && b.fallsThrough() && a.reaches(b.shape) {
		return true
	}
	for _, x := range a.g.Ops {
		sx := shapeOf(a.bl.ob(x).segs)
		for _, y := range b.g.Ops {
			sy := shapeOf(a.bl.ob(y).segs)
			if !sx.overlaps(sy) {
				continue
			}
			xInY, yInX := sx.coveredBy(sy), sy.coveredBy(sx)
			switch {
			case xInY && yInX: // the same pattern: one route already
			case xInY && !(aInB && !bInA): // x first, a must be the narrower route
				return true
			case yInX && !(bInA && !aInB):
				return true
			case !xInY && !yInX:
				return true
			}
		}
	}
	return false
}

// fallsThrough reports whether some path that the route's pattern matches
// matches none of its operations: no operation has the pattern's shape
// with whole-segment parameters.
func (r *route) fallsThrough() bool {
	for _, o := range r.g.Ops {
		whole := true
		for _, s := range r.bl.ob(o).segs {
			whole = whole && (len(s.params) == 0 || s.wholeParam())
		}
		if whole && slices.Equal(shapeOf(r.bl.ob(o).segs), r.shape) {
			return false
		}
	}
	return true
}

// reaches reports whether some operation of r matches a path of shape sh.
func (r *route) reaches(sh shape) bool {
	for _, o := range r.g.Ops {
		if shapeOf(r.bl.ob(o).segs).overlaps(sh) {
			return true
		}
	}
	return false
}

// overlaps reports whether some path matches both a and b (of one length).
func (a shape) overlaps(b shape) bool {
	for i := range a {
		if !a[i].wild && !b[i].wild && a[i].lit != b[i].lit {
			return false
		}
	}
	return true
}

// nameRoute chooses the wildcard of every segment of g's pattern sh and the
// segments each operation splits or compares.
func (b *builder) nameRoute(g *RouteGroup, sh shape) {
	sort.SliceStable(g.Ops, func(i, j int) bool { return before(b.ob(g.Ops[i]).segs, b.ob(g.Ops[j]).segs) })
	taken := map[string]bool{}
	for _, o := range g.Ops {
		for _, s := range b.ob(o).segs {
			for _, p := range s.params {
				taken[p] = true
			}
		}
	}
	parts := make([]string, len(sh))
	wild := map[int]string{}
	for i, seg := range sh {
		if !seg.wild {
			parts[i] = seg.lit
			continue
		}
		// The name of an operation's parameter that fills the segment, when
		// no other operation has a parameter of that name elsewhere: that
		// operation reads it as it is (GitHub's /compare/{basehead} beside
		// /compare/{base}...{head}).
		name, ok := b.wholeParamName(g.Ops, i)
		if !ok {
			from := b.ob(g.Ops[0]).segs[i]
			for _, o := range g.Ops {
				if len(b.ob(o).segs[i].params) > 0 {
					from = b.ob(o).segs[i]
					break
				}
			}
			name = segmentWildcard(from)
			for taken[name] {
				name += "_"
			}
		}
		taken[name] = true
		wild[i] = name
		parts[i] = "{" + name + "}"
	}
	g.Pattern = strings.Join(parts, "/")
	if strings.HasSuffix(g.Pattern, "/") {
		g.Pattern += "{$}"
	}
	for _, o := range g.Ops {
		o.Pattern = g.Pattern
		o.Segments = nil
		for i, s := range b.ob(o).segs {
			w, ok := wild[i]
			if ok && !(s.wholeParam() && s.params[0] == w) {
				o.Segments = append(o.Segments, PathSegment{Wildcard: w, Literals: s.lits, Params: s.params})
			}
		}
	}
}

// wholeParamName is the name of the first of ops whose parameter fills
// segment i, unless another operation's parameter of that name is elsewhere.
func (b *builder) wholeParamName(ops []*Operation, i int) (string, bool) {
	name := ""
	for _, o := range ops {
		if s := b.ob(o).segs[i]; s.wholeParam() {
			name = s.params[0]
			break
		}
	}
	if name == "" {
		return "", false
	}
	for _, o := range ops {
		for j, s := range b.ob(o).segs {
			if j != i && slices.Contains(s.params, name) || j == i && !s.wholeParam() && slices.Contains(s.params, name) {
				return "", false
			}
		}
	}
	return name, true
}

// segmentWildcard names the wildcard of a segment after its parameters and
// literals: "{base}...{head}" gives base_head, "{name}.json" name_json.
func segmentWildcard(s pathSeg) string {
	var words []string
	add := func(t string) {
		var w strings.Builder
		for _, r := range t {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
				w.WriteRune(r)
			default:
				if w.Len() > 0 {
					words = append(words, w.String())
					w.Reset()
				}
			}
		}
		if w.Len() > 0 {
			words = append(words, w.String())
		}
	}
	for i, p := range s.params {
		add(s.lits[i])
		add(p)
	}
	add(s.lits[len(s.lits)-1])
	name := strings.Join(words, "_")
	if !isGoIdent(name) {
		name = "segment_" + name
	}
	return name
}

// FallsThrough reports whether a path may match none of the route's
// operations (the last one splits segments too): the dispatcher answers 404.
func (g *RouteGroup) FallsThrough() bool { return len(g.Ops[len(g.Ops)-1].Segments) > 0 }
