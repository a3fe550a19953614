package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/model"
)

// probe observes an operation's effect through the GET the spec declares on
// the same path (GET /payments for POST /payments): the items it lists
// before and after a request. It cannot prove that nothing happened (the
// list may be paged or sorted away), only count what appears.
type probe struct {
	c    *opRun
	get  *model.Operation
	q    request
	name string // member holding the list; "" when the body is the list
}

// probe returns the operation's probe, or nil when the spec declares no
// GET listing the collection.
func (p *opRun) probe(q request) *probe {
	for _, o := range p.r.spec.Model.Operations {
		if o.Method != http.MethodGet || o.Path != p.o.Path || !listsItems(p.r.spec.Operation(o)) {
			continue
		}
		gp := p.r.prepare(o)
		pq := request{method: http.MethodGet, path: q.path, query: url.Values{}, header: http.Header{}}
		usable := true
		for _, prm := range o.Params {
			val, given := p.r.param(o.ID, prm.Name)
			switch {
			case prm.In == "path":
				continue // the same path as the operation's
			case given:
			case prm.In == "query" && isLimit(prm.Name):
				// The largest page the spec allows, so new items show.
				if v, ok := gp.maximum(prm); ok {
					val = v
					break
				}
				continue
			case prm.Required:
				v, err := gp.paramValue(prm)
				if err != nil {
					usable = false
				}
				val = v
			default:
				continue
			}
			switch prm.In {
			case "query":
				pq.query.Set(prm.Name, val)
			case "header":
				pq.header.Set(prm.Name, val)
			}
		}
		if usable {
			return &probe{c: p, get: o, q: pq}
		}
	}
	return nil
}

// listsItems reports whether a GET's 200 response is a JSON array, or an
// object with an array member.
func listsItems(op *openapi3.Operation) bool {
	if op == nil || op.Responses == nil {
		return false
	}
	rr := op.Responses.Value("200")
	if rr == nil || rr.Value == nil {
		return false
	}
	media := rr.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil || media.Schema.Value == nil {
		return false
	}
	s := media.Schema.Value
	if typeOf(s) == openapi3.TypeArray {
		return true
	}
	for _, ps := range s.Properties {
		if ps != nil && ps.Value != nil && typeOf(ps.Value) == openapi3.TypeArray {
			return true
		}
	}
	return false
}

func isLimit(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "limit") || strings.Contains(n, "size") || n == "per_page" || n == "count"
}

// maximum is a parameter's declared maximum, as a query value.
func (p *opRun) maximum(prm *model.Param) (string, bool) {
	sr := model.ParameterSchema(p.kinParam(prm))
	if sr == nil || sr.Value == nil || sr.Value.Max == nil {
		return "", false
	}
	return strconv.FormatFloat(*sr.Value.Max, 'f', -1, 64), true
}

// list returns the identities of the listed items; nil when the probe is
// nil or the GET does not answer a list.
func (pr *probe) list(ctx context.Context) map[string]bool {
	if pr == nil {
		return nil
	}
	ex := pr.c.r.send(ctx, "", pr.q)
	if ex.Status != 200 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(ex.raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		obj, isObj := v.(map[string]any)
		if !isObj {
			return nil
		}
		// The first member (by name) that is a list.
		names := sortedMapKeys(obj)
		sort.Strings(names)
		for _, n := range names {
			if l, isList := obj[n].([]any); isList {
				items, ok = l, true
				break
			}
		}
		if !ok {
			return nil
		}
	}
	out := map[string]bool{}
	for _, it := range items {
		if m, isObj := it.(map[string]any); isObj && m["id"] != nil {
			out[fmt.Sprint(m["id"])] = true
			continue
		}
		out[canonical(it, nil)] = true
	}
	return out
}

// newItems counts the items listed now that before did not hold, with a
// note for the evidence.
func (pr *probe) newItems(ctx context.Context, before map[string]bool) (int, string) {
	if pr == nil {
		return 0, ""
	}
	after := pr.list(ctx)
	if before == nil || after == nil {
		return 0, fmt.Sprintf("%s (GET %s) did not answer a list", pr.get.ID, pr.get.Path)
	}
	n := 0
	for id := range after {
		if !before[id] {
			n++
		}
	}
	return n, fmt.Sprintf("%s lists %s", pr.get.ID, plural(n, "new item"))
}

// expect counts the items listed since before and adds what to problems
// when more than allowed appeared. It returns the count as evidence ("; ..."),
// or "" without a probe.
func (pr *probe) expect(ctx context.Context, before map[string]bool, allowed int, what string, problems *[]string) string {
	if pr == nil {
		return ""
	}
	n, note := pr.newItems(ctx, before)
	if n > allowed {
		*problems = append(*problems, note+": "+what)
	}
	return "; " + note
}
