package model

import (
	"errors"
	"sort"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// limitsExt is the extension that sets an operation's request limits
// (idemimpl.Limits): at the document root for every operation, on an
// operation for that one.
const limitsExt = "x-request-limits"

// RequestLimits are the resolved limits of one operation's request
// decoding, as idemimpl.Limits: defaults, then the root's
// x-request-limits, then the operation's.
type RequestLimits struct {
	MaxDepth, MaxFields, MaxNameLength, MaxValues int
}

func (l RequestLimits) runtime() idemimpl.Limits {
	return idemimpl.Limits{MaxDepth: l.MaxDepth, MaxFields: l.MaxFields, MaxNameLength: l.MaxNameLength, MaxValues: l.MaxValues}
}

func limitsFromRuntime(r idemimpl.Limits) RequestLimits {
	return RequestLimits{MaxDepth: r.MaxDepth, MaxFields: r.MaxFields, MaxNameLength: r.MaxNameLength, MaxValues: r.MaxValues}
}

func defaultLimits() RequestLimits { return limitsFromRuntime(idemimpl.DefaultLimits()) }

// limitsPatch is a parsed x-request-limits object: only the fields present.
type limitsPatch map[string]int

// parseLimits parses one x-request-limits value; where prefixes messages
// (`openapi.yaml: operation "createOrder": `). Types and names are checked
// here, ranges by idemimpl.Limits.Validate on the resolved limits.
func parseLimits(v any, where string, errs *errList) limitsPatch {
	m, ok := v.(map[string]any)
	if !ok {
		errs.addf("%s%s: want an object of limits such as {maxDepth: 16}, got %s", where, limitsExt, describe(v))
		return nil
	}
	known := idemimpl.DefaultLimits().Fields()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p := limitsPatch{}
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			errs.addf("%s%s.%s: unknown field (want one of %s)", where, limitsExt, k, limitNames())
			continue
		}
		f, isNum := m[k].(float64)
		if !isNum || f != float64(int(f)) {
			errs.addf("%s%s.%s: want an integer, got %s", where, limitsExt, k, describe(m[k]))
			continue
		}
		p[k] = int(f)
	}
	return p
}

func limitNames() string {
	var names []string
	for n := range idemimpl.DefaultLimits().Fields() {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// apply returns base with the limits p sets.
func (p limitsPatch) apply(base RequestLimits) RequestLimits {
	for k, v := range p {
		switch k {
		case "maxDepth":
			base.MaxDepth = v
		case "maxFields":
			base.MaxFields = v
		case "maxNameLength":
			base.MaxNameLength = v
		case "maxValues":
			base.MaxValues = v
		}
	}
	return base
}

// checkLimits reports the limits p sets that are out of range, resolved in
// l (where: `openapi.yaml: operation "createOrder": `).
func (b *builder) checkLimits(l RequestLimits, p limitsPatch, where string) {
	err := l.runtime().Validate()
	if err == nil {
		return
	}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var le *idemimpl.LimitError
		if errors.As(e, &le) {
			if _, set := p[le.Field]; set {
				b.errs.addf("%s%s.%s: %s", where, limitsExt, le.Field, le.Message)
			}
		}
	}
}

// limits resolves the limits of one operation from the root's and its own
// x-request-limits; nil when they are the defaults.
func (b *builder) limits(ext map[string]any, where string) *RequestLimits {
	l := b.rootLimits.apply(defaultLimits())
	if v, ok := ext[limitsExt]; ok {
		p := parseLimits(v, where, b.errs)
		l = p.apply(l)
		b.checkLimits(l, p, where)
	}
	if l == defaultLimits() {
		return nil
	}
	return &l
}
