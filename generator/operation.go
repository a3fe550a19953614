package generator

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

var idempotentByDefault = map[string]bool{http.MethodPost: true, http.MethodPatch: true}

func (b *builder) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation, root *policyPatch, cfg *Config) *Operation {
	method = strings.ToUpper(method)
	id := op.OperationID
	if id == "" {
		id = lowerName(strings.ToLower(method) + " " + path)
	}
	o := &Operation{ID: id, GoName: goName(id), Method: method, Path: path, Summary: firstLine(op.Summary), Deprecated: op.Deprecated,
		Location: "#/paths/" + pointerEscape(path) + "/" + strings.ToLower(method)}
	if o.Summary == "" {
		o.Summary = firstLine(op.Description)
	}
	where := fmt.Sprintf("%s: operation %q: ", b.file, id)
	for _, suffix := range []string{"Request", "Response"} {
		b.ns.claim(o.GoName+suffix, fmt.Sprintf("operation %q (%s %s)", id, method, path))
	}

	// Route pattern.
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if strings.Contains(seg, "{") {
			if !strings.HasPrefix(seg, "{") || !strings.HasSuffix(seg, "}") || strings.Count(seg, "{") != 1 {
				b.errs.addf("%spath segment %q: a parameter must fill a whole segment (net/http.ServeMux)", where, seg)
				continue
			}
			name := seg[1 : len(seg)-1]
			o.PathParams = append(o.PathParams, muxWildcard(name))
			segs[i] = "{" + muxWildcard(name) + "}"
		}
	}
	o.Pattern = strings.Join(segs, "/")
	if strings.HasSuffix(o.Pattern, "/") {
		o.Pattern += "{$}"
	}

	// Responses first: replayStatuses are checked against them.
	b.responses(o, op)

	// Idempotency policy.
	v, hasExt := op.Extensions["x-idempotent"]
	var patch *policyPatch
	optOut := false
	if hasExt {
		patch, optOut = parseExtension(v, where, b.errs)
	}
	switch {
	case optOut:
		if cfg.RequireIdempotent && idempotentByDefault[method] {
			b.errs.addf("%sx-idempotent: false is not allowed: the config requires every POST and PATCH to be idempotent", where)
		}
	case hasExt:
		o.Idempotent = patch != nil
	case root != nil && idempotentByDefault[method]:
		o.Idempotent = true
	}
	if o.Idempotent {
		o.Policy = patch.apply(root.apply(DefaultPolicy()))
		declared := map[int]bool{}
		for _, r := range o.Responses {
			declared[r.Code] = r.Code != 0
		}
		if patch != nil && patch.set["replayStatuses"] {
			for _, st := range o.Policy.ReplayStatuses {
				if !declared[st] {
					b.errs.addf("%sx-idempotent.replayStatuses: %d is not a response the operation declares", where, st)
				}
			}
		} else if o.Policy.ReplayStatuses != nil {
			// Root statuses apply where the operation declares them.
			var kept []int
			for _, st := range o.Policy.ReplayStatuses {
				if declared[st] {
					kept = append(kept, st)
				}
			}
			o.Policy.ReplayStatuses = kept
		}
		if o.Policy.SchemaVersion == "auto" {
			o.Policy.SchemaVersion = b.versions.of(op)
		}
	}

	o.ownExclusions = patch != nil && patch.set["fingerprint"]
	b.params(o, item, op, where)
	b.body(o, op, where)
	b.checkExclusions(o, where)
	return o
}

func pointerEscape(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

func muxWildcard(name string) string {
	if isGoIdent(name) {
		return name
	}
	return lowerName(name)
}

func (b *builder) responses(o *Operation, op *openapi3.Operation) {
	if op.Responses == nil {
		return
	}
	for _, status := range op.Responses.Keys() {
		rr := op.Responses.Value(status)
		if rr == nil || rr.Value == nil {
			continue
		}
		r := &Response{Status: status}
		label := strings.ToUpper(status)
		if status == "default" {
			label = "Default"
		} else if c, err := strconv.Atoi(status); err == nil {
			r.Code = c
		}
		r.TypeName = o.GoName + label + "Response"
		b.ns.claim(r.TypeName, fmt.Sprintf("operation %q response %s", o.ID, status))
		if rr.Value.Description != nil {
			r.Description = firstLine(*rr.Value.Description)
		}
		if mt, media := pickMedia(rr.Value.Content); media != nil {
			r.MediaType = mt
			r.JSON = isJSON(mt)
			if r.JSON {
				r.Body = b.goType(media.Schema, r.TypeName+"Body", fmt.Sprintf("%s/responses/%s/content/%s/schema", o.Location, status, pointerEscape(mt)))
			} else {
				r.Body = GoType{Kind: GoBytes}
			}
		}
		fields := map[string]bool{"Body": true, "Status": true}
		for _, h := range sortedKeys(rr.Value.Headers) {
			f := goName(h)
			if fields[f] || strings.EqualFold(h, "Content-Type") {
				continue
			}
			fields[f] = true
			r.Headers = append(r.Headers, Header{Name: http.CanonicalHeaderKey(h), Field: f})
		}
		o.Responses = append(o.Responses, r)
	}
	sort.SliceStable(o.Responses, func(i, j int) bool { return statusOrder(o.Responses[i].Status) < statusOrder(o.Responses[j].Status) })
}

func statusOrder(s string) string {
	if s == "default" {
		return "9999"
	}
	return s
}

func isJSON(mt string) bool {
	mt = strings.ToLower(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*" || mt == "application/*"
}

// pickMedia chooses the media type a generated handler speaks: JSON when
// offered, otherwise the first in sorted order.
func pickMedia(c openapi3.Content) (string, *openapi3.MediaType) {
	if len(c) == 0 {
		return "", nil
	}
	keys := sortedKeys(c)
	for _, k := range keys {
		if isJSON(k) && k != "*/*" {
			return k, c[k]
		}
	}
	return keys[0], c[keys[0]]
}

// checkRoutes refuses two operations ServeMux would reject as conflicting.
func (b *builder) checkRoutes(ops []*Operation) {
	seen := map[string]*Operation{}
	for _, o := range ops {
		shape := o.Method + " " + wildcardRE(o.Pattern)
		if prev, ok := seen[shape]; ok {
			b.errs.addf("%s: operations %q (%s %s) and %q (%s %s) have the same route", b.file, prev.ID, prev.Method, prev.Path, o.ID, o.Method, o.Path)
			continue
		}
		seen[shape] = o
	}
}

func wildcardRE(p string) string {
	var out strings.Builder
	depth := 0
	for _, r := range p {
		switch {
		case r == '{':
			depth++
			out.WriteString("{}")
		case r == '}':
			depth--
		case depth == 0:
			out.WriteRune(r)
		}
	}
	return out.String()
}
