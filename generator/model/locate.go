// Lines for the problems the model finds: they name what is wrong in the
// spec's terms (an operation, x-idempotent.ttl, a #/ location); the line
// is looked up in the document's nodes, parsed only when there is a
// problem to locate.

package model

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/load"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

var (
	// opPrefix and pathPrefix are the subjects of a problem:
	// `operation "createOrder": `, `operation "x" (POST /x): `, `path "/x": `.
	opPrefix   = regexp.MustCompile(`^operation "([^"]*)"(?: \([A-Z]+ [^)]*\))?: `)
	pathPrefix = regexp.MustCompile(`^path "([^"]*)": `)
	// member is the member it names, an extension's mostly:
	// x-idempotent, x-idempotent.fingerprint.exclude[0],
	// x-request-limits.maxDepth, X-Idempotent, responses.400 (and a
	// parenthesis after it).
	memberPath = regexp.MustCompile(`^([\w$-]+)((?:\.\w+|\[\d+\])*)(?: \([^)]*\))?: `)
	// pointerSubject is a location a problem starts with: #/components/...
	pointerSubject = regexp.MustCompile(`^#(/[^\s:]*)`)
	memberToken    = regexp.MustCompile(`\.(\w+)|\[(\d+)\]`)
)

// locate puts `line N: ` after the spec's name in each problem of e that
// has no line yet and names something the document holds: the member of
// an x- extension (or another key) of an operation, a path item or the
// root, else the operation, else the #/ location the problem starts with;
// then sorts them by line.
func (b *builder) locate(e *diag.SpecError) *diag.SpecError {
	if len(b.data) == 0 {
		return e
	}
	root, err := load.Nodes(b.data)
	if err != nil {
		return e
	}
	prefix := b.file + ": "
	for i, p := range e.Problems {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok || strings.HasPrefix(rest, "line ") {
			continue
		}
		subject, base := rest, ""
		if m := opPrefix.FindStringSubmatch(rest); m != nil && b.opLocs[m[1]] != "" {
			subject, base = rest[len(m[0]):], strings.TrimPrefix(b.opLocs[m[1]], "#")
		} else if m := pathPrefix.FindStringSubmatch(rest); m != nil {
			subject, base = rest[len(m[0]):], "/paths/"+jsonkit.EscapeToken(m[1])
		}
		ptr := base
		if m := memberPath.FindStringSubmatch(subject); m != nil {
			ptr += "/" + jsonkit.EscapeToken(m[1])
			for _, t := range memberToken.FindAllStringSubmatch(m[2], -1) {
				ptr += "/" + t[1] + t[2]
			}
		} else if m := pointerSubject.FindStringSubmatch(subject); m != nil && base == "" {
			ptr = m[1]
		} else if base == "" {
			continue
		}
		if line := load.Line(root, ptr); line > 0 {
			e.Problems[i] = fmt.Sprintf("%sline %d: %s", prefix, line, rest)
		}
	}
	sort.SliceStable(e.Problems, func(i, j int) bool { return diag.LocatedLess(e.Problems[i], e.Problems[j]) })
	return e
}
