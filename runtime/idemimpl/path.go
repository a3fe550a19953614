package idemimpl

import (
	"net/http"
	"strings"
)

// PathSegment describes one segment of an operation's path that the ServeMux
// wildcard Wildcard holds whole but that holds parameters between literals,
// such as "{base}...{head}" or "{name}.json", or a parameter whose name is not
// the wildcard's, or a literal (operations sharing a route).
type PathSegment struct {
	// Wildcard is the ServeMux wildcard that matches the whole segment.
	Wildcard string
	// Literals are the texts before the first parameter, between each two
	// and after the last: len(Params)+1 of them, only the first and the
	// last may be empty. Without Params, the one literal the segment must
	// be.
	Literals []string
	// Params are the names the parameters' values are stored under
	// (Request.SetPathValue), in order.
	Params []string
}

// MatchPath splits the segments segs of r's path into their parameters. It
// stores them with r.SetPathValue and reports true when every segment has its
// literals (is its literal, for one without parameters) and every parameter
// a non-empty value; else it changes nothing and
// reports false: the path is not the operation's, as a router matching the
// spec's path template would say. A parameter followed by a literal takes the
// shortest non-empty text that the literal follows ("a...b...c" against
// "{base}...{head}" gives base "a" and head "b...c"); the last one takes what
// is left before the segment's final literal.
func MatchPath(r *http.Request, segs []PathSegment) bool {
	var buf [8]string
	vals := buf[:0]
	for i := range segs {
		s := &segs[i]
		if len(s.Params) == 0 {
			if r.PathValue(s.Wildcard) != s.Literals[0] {
				return false
			}
			continue
		}
		rest, ok := strings.CutPrefix(r.PathValue(s.Wildcard), s.Literals[0])
		if !ok {
			return false
		}
		if rest, ok = strings.CutSuffix(rest, s.Literals[len(s.Literals)-1]); !ok {
			return false
		}
		for j := range s.Params {
			v := rest
			if j < len(s.Params)-1 {
				lit := s.Literals[j+1]
				if rest == "" {
					return false
				}
				k := strings.Index(rest[1:], lit)
				if k < 0 {
					return false
				}
				v, rest = rest[:k+1], rest[k+1+len(lit):]
			}
			if v == "" {
				return false
			}
			vals = append(vals, v)
		}
	}
	n := 0
	for i := range segs {
		for _, name := range segs[i].Params {
			r.SetPathValue(name, vals[n])
			n++
		}
	}
	return true
}
