package model

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/reserved"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

var idempotentByDefault = map[string]bool{http.MethodPost: true, http.MethodPatch: true}

// IdempotentByDefault reports whether an operation of method (upper case)
// goes through the engine when the document root's x-idempotent applies
// or nothing opts it out: POST and PATCH.
func IdempotentByDefault(method string) bool { return idempotentByDefault[method] }

// DefaultOperationID is the id of an operation without an operationId: its
// method and path, camel-cased (post /payments/{id} is postPaymentsId).
func DefaultOperationID(method, path string) string {
	return lowerName(strings.ToLower(method) + " " + path)
}

// NotIdempotentGap is what generation warns (diag.WarnNotIdempotent) and
// lint reports as an error about a POST or PATCH that is idempotent
// neither by its own x-idempotent nor by the root's.
const NotIdempotentGap = "not idempotent: no x-idempotent on the operation or at the root (annotate it, or opt out with x-idempotent: false)"

func (b *builder) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation, root *policyPatch) *Operation {
	method = strings.ToUpper(method)
	id := op.OperationID
	if id == "" {
		id = DefaultOperationID(method, path)
	}
	o := &Operation{ID: id, Method: method, Path: path, Summary: firstLine(op.Summary), Deprecated: op.Deprecated,
		Location: "#/paths/" + jsonkit.EscapeToken(path) + "/" + strings.ToLower(method)}
	if o.Summary == "" {
		o.Summary = firstLine(op.Description)
	}
	where := fmt.Sprintf("%s: operation %q: ", b.file, id)
	if _, dup := b.opLocs[id]; !dup {
		b.opLocs[id] = o.Location
	}
	b.misspeltExtensions(where, op.Extensions)

	// Route pattern: one ServeMux wildcard per segment holding parameters,
	// named for good once the routes are grouped (checkRoutes).
	segs, ok := b.parsePath(path, where)
	if !ok {
		return nil
	}
	b.ob(o).segs = segs
	wild := map[int]string{}
	for i, s := range segs {
		o.PathParams = append(o.PathParams, s.params...)
		if s.wholeParam() {
			wild[i] = s.params[0]
		} else if len(s.params) > 0 {
			wild[i] = segmentWildcard(s)
		}
	}
	o.Pattern = pattern(segs, wild)

	want := goName(id)
	b.ob(o).ident = b.names.fixed(b.methods, &o.GoName, want, o.Location, "operation", rankOperation, closeness(id, want), true)
	what := fmt.Sprintf("operation %q (%s %s)", id, method, path)
	b.names.derived(b.names.pkg, &o.RequestTypeName, b.ob(o).ident, "Request", o.Location, what, rankDerived, false)
	b.names.derived(b.names.pkg, &o.ResponseTypeName, b.ob(o).ident, "Response", o.Location, what, rankDerived, false)
	b.nameHelpers(o, what)
	b.ob(o).requestFields = b.names.scope("fields of the request of "+what, reserved.Names[reserved.RequestFields]...)

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
		if b.requireIdempotent && idempotentByDefault[method] {
			b.errs.addf("%sx-idempotent: false is not allowed: the config requires every POST and PATCH to be idempotent", where)
		}
	case hasExt:
		o.Idempotent = patch != nil
	case root != nil && idempotentByDefault[method]:
		o.Idempotent = true
	case idempotentByDefault[method]:
		// Most likely an annotation forgotten: say so (lint makes it an
		// error, generate -strict too).
		b.warnf(diag.WarnNotIdempotent, fmt.Sprintf("operation %q (%s %s)", id, method, path), "%s", NotIdempotentGap)
	}
	if o.Idempotent {
		o.Policy = patch.apply(root.apply(DefaultPolicy()))
		defaultKeyFormat(&o.Policy, root, patch)
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
		b.checkPolicy(o.Policy, where, root, patch, false)
		b.warnUnstoredHeaders(o)
	}

	b.ob(o).ownExclusions = patch != nil && patch.set["fingerprint"]
	o.Limits = b.limits(op.Extensions, where)
	b.security(o, op)
	b.params(o, item, op, where)
	b.body(o, op, where)
	if o.Body != nil {
		for _, p := range o.Params {
			if p.In == "header" && strings.EqualFold(p.Name, "Content-Encoding") {
				o.Body.ContentEncoding = true
			}
		}
	}
	b.checkExclusions(o, where)
	return o
}

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
	inOp := responseRefs(op)
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
		rloc := o.Location + "/responses/" + jsonkit.EscapeToken(status)
		rid := b.names.derived(b.names.pkg, &r.TypeName, b.ob(o).ident, label+"Response", rloc, "response", rankDerived, false)
		if rr.Value.Description != nil {
			r.Description = firstLine(*rr.Value.Description)
		}
		key := responseKey(rr.Ref, r.Code)
		if key != "" && inOp[key] == 1 && b.responseUses[key] > 1 {
			if s := b.sharedResponses[key]; s != nil {
				r.Shared, r.MediaType, r.JSON, r.Body, r.Headers = s, s.Response.MediaType, s.Response.JSON, s.Response.Body, s.Response.Headers
				s.Uses++
				o.Responses = append(o.Responses, r)
				continue
			}
			// The first use builds the type, its body and headers named
			// after the component rather than after this operation.
			r.Shared, rid = b.sharedResponse(key, rr.Ref, rr.Value, r)
			rloc = rr.Ref
		}
		b.notMediaTypes(rr.Value.Content, fmt.Sprintf("operation %q response %s", o.ID, status))
		if mt, media := pickMedia(rr.Value.Content); media != nil {
			r.MediaType = mt
			r.JSON = speaksJSON(mt)
			if r.JSON {
				r.Body = b.goType(media.Schema, nameHint{parent: rid, suffix: "Body", alone: true}, fmt.Sprintf("%s/content/%s/schema", rloc, jsonkit.EscapeToken(mt)))
			} else {
				r.Body = GoType{Kind: GoBytes}
			}
		}
		fields := b.names.scope("fields of response "+rloc, reserved.Names[reserved.ResponseFields]...)
		for _, name := range sortedKeys(rr.Value.Headers) {
			if strings.EqualFold(name, "Content-Type") {
				continue
			}
			h := &Header{Name: http.CanonicalHeaderKey(name), Type: GoType{Kind: GoBuiltin, Name: "string"}}
			hloc := rloc + "/headers/" + jsonkit.EscapeToken(name)
			b.names.fixed(fields, &h.Field, goName(name), hloc, "header", rankComponent, closeness(name, goName(name)), true)
			if hr := rr.Value.Headers[name]; hr != nil && hr.Value != nil {
				h.Required = hr.Value.Required
				if hr.Value.Schema != nil {
					gt := b.goType(hr.Value.Schema, nameHint{parent: rid, suffix: goName(name)}, hloc+"/schema")
					if b.headerScalar(gt) {
						h.Type = gt
					}
				}
			}
			if !h.Required && !h.IsString() {
				h.Type = ptr(h.Type)
			}
			r.Headers = append(r.Headers, h)
		}
		o.Responses = append(o.Responses, r)
	}
	sort.SliceStable(o.Responses, func(i, j int) bool { return statusOrder(o.Responses[i].Status) < statusOrder(o.Responses[j].Status) })
}

// responseRefs counts the responses of op by responseKey: a component
// named under two statuses of one operation keeps a type per status there
// (its encoder tells its responses apart by their types).
func responseRefs(op *openapi3.Operation) map[string]int {
	n := map[string]int{}
	if op.Responses == nil {
		return n
	}
	for _, status := range op.Responses.Keys() {
		rr := op.Responses.Value(status)
		if rr == nil || rr.Value == nil {
			continue
		}
		code, err := strconv.Atoi(status)
		if err != nil {
			code = 0
		}
		if key := responseKey(rr.Ref, code); key != "" {
			n[key]++
		}
	}
	return n
}

// responseKey is the key of a response that names a component of the
// document by $ref, with its shape (a struct with a Status field for a
// range or default, code 0, or without); "" for an inline response.
func responseKey(ref string, code int) string {
	if !strings.HasPrefix(ref, "#/components/responses/") {
		return ""
	}
	if code == 0 {
		return ref + " status"
	}
	return ref
}

// countResponseUses counts, for each responseKey, the operations of doc
// that answer with it under one status.
func (b *builder) countResponseUses(doc *openapi3.T) {
	b.responseUses = map[string]int{}
	b.sharedResponses = map[string]*SharedResponse{}
	if doc.Paths == nil {
		return
	}
	for _, path := range doc.Paths.InMatchingOrder() {
		for _, op := range doc.Paths.Value(path).Operations() {
			for key, n := range responseRefs(op) {
				if n == 1 {
					b.responseUses[key]++
				}
			}
		}
	}
}

// sharedResponse declares the type of the response component ref, first
// answered with as r: named after the component (Unauthorized ->
// UnauthorizedResponse) on the level of the types named after
// operations, ranked as an inline type: an operation's own names
// (GetNoteResponse) and the component schemas keep theirs, and a clash
// numbers this one, with a warning.
func (b *builder) sharedResponse(key, ref string, rv *openapi3.Response, r *Response) (*SharedResponse, *ident) {
	s := &SharedResponse{Location: ref, Response: r, Uses: 1}
	if rv.Description != nil {
		s.Description = firstLine(*rv.Description)
	}
	name := ref[strings.LastIndex(ref, "/")+1:]
	if toks, err := jsonkit.ParsePointer(strings.TrimPrefix(ref, "#")); err == nil && len(toks) == 3 {
		name = toks[2]
	}
	want := goName(name)
	if !strings.HasSuffix(want, "Response") {
		want += "Response"
	}
	if r.Code == 0 && b.responseUses[ref] > 1 {
		want += "WithStatus" // the same component answered under a code too
	}
	id := b.names.typeIdent(&s.TypeName, want, ref, rankInline, closeness(name, want))
	b.sharedResponses[key] = s
	b.sharedList = append(b.sharedList, s)
	return s, id
}

// headerScalar reports whether a header can carry a value of type t.
func (b *builder) headerScalar(t GoType) bool {
	switch t.Kind {
	case GoBuiltin, GoTime, GoUUID, GoDate:
		return true
	case GoNamed:
		switch t.Named.Kind {
		case KindEnum:
			return true
		case KindAlias:
			return b.headerScalar(t.Named.Alias)
		}
	}
	return false
}

func statusOrder(s string) string {
	if s == "default" {
		return "9999"
	}
	return s
}

// speaksJSON reports whether generated code reads and writes a body of the
// declared media type mt as JSON: a JSON media type (jsonkit.IsJSON), or
// a range that admits application/json (*/*, application/*). A schema under
// a range describes a JSON value in practice (springdoc declares every
// response */*), and JSON is a choice the range leaves to the server; what
// is sent is then application/json (responseContentType), never the range.
func speaksJSON(mt string) bool {
	mt = strings.ToLower(mt)
	return jsonkit.IsJSON(mt) || jsonkit.IsRange(mt) && jsonkit.MatchRange(mt, "application/json") > 0
}

// ContentType is the Content-Type a generated server sends with the
// response: its MediaType, or application/json for a range it speaks JSON
// for (a range is not a media type a body can have, RFC 9110 section 8.3).
func (r *Response) ContentType() string {
	if jsonkit.IsRange(r.MediaType) && speaksJSON(r.MediaType) {
		return "application/json"
	}
	return r.MediaType
}

// pickMedia chooses the media type a generated handler speaks: JSON when
// offered, otherwise the first in sorted order.
func pickMedia(c openapi3.Content) (string, *openapi3.MediaType) {
	var keys []string
	for _, k := range sortedKeys(c) {
		if isMediaType(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "", nil
	}
	for _, k := range keys {
		if speaksJSON(k) && k != "*/*" {
			return k, c[k]
		}
	}
	return keys[0], c[keys[0]]
}

// isMediaType reports whether a content key is a media type or a range
// (type/subtype, with parameters or not), and not, say, an examples
// member written one level too high.
func isMediaType(key string) bool {
	mt, _, _ := jsonkit.ParseMediaType(key)
	typ, sub, ok := strings.Cut(mt, "/")
	return ok && typ != "" && sub != "" && !strings.ContainsAny(mt, " \t")
}

// notMediaTypes warns about the keys of content c (at where) that are not
// media types: they are left out.
func (b *builder) notMediaTypes(c openapi3.Content, where string) {
	for _, k := range sortedKeys(c) {
		if !isMediaType(k) {
			b.warnf(diag.WarnSpec, where, "content %q is not a media type: it is left out", k)
		}
	}
}

// nameHelpers declares the names the generated code derives from the
// operation's for its own declarations (OperationNames).
func (b *builder) nameHelpers(o *Operation, what string) {
	n, pkg, on := b.names, b.names.pkg, &o.Names
	n.affixed(b.handlerMethods, &on.Handler, b.ob(o).ident, "handle", "", o.Location, what+" handler")
	n.affixed(pkg, &on.Decoder, b.ob(o).ident, "decode", "Request", o.Location, what+" decoder")
	n.affixed(pkg, &on.Op, b.ob(o).ident, "op", "", o.Location, what+" operation table")
	n.affixed(pkg, &on.Params, b.ob(o).ident, "params", "", o.Location, what+" parameter table")
	n.affixed(pkg, &on.Body, b.ob(o).ident, "body", "", o.Location, what+" body table")
	n.affixed(pkg, &on.Limits, b.ob(o).ident, "limits", "", o.Location, what+" request limits")
	n.affixed(b.markers, &on.Marker, b.ob(o).ident, "is", "Response", o.Location, what+" response marker")
	encode := "encode"
	if b.split {
		encode = "Encode" // exported from the package of the operations' types
	}
	n.affixed(pkg, &on.Encoder, b.ob(o).ident, encode, "Response", o.Location, what+" response encoder")
	n.affixed(pkg, &on.Segments, b.ob(o).ident, "pathSegments", "", o.Location, what+" path segments")
	if b.clientPkg != nil {
		n.affixed(b.clientPkg, &on.ClientOp, b.ob(o).ident, "clientOp", "", o.Location, what+" client operation")
		n.affixed(b.clientPkg, &on.ClientReader, b.ob(o).ident, "read", "Response", o.Location, what+" client response reader")
	}
}
