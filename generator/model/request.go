package model

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/suggest"
	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// params builds the operation's parameters, the path item's overridden by
// the operation's of the same name and location, in a fixed order.
func (b *builder) params(o *Operation, item *openapi3.PathItem, op *openapi3.Operation, where string) {
	type key struct{ in, name string }
	merged := map[key]*openapi3.Parameter{}
	var order []key
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			k := key{pr.Value.In, pr.Value.Name}
			if pr.Value.In == "header" {
				k.name = http.CanonicalHeaderKey(k.name)
			}
			if _, ok := merged[k]; !ok {
				order = append(order, k)
			}
			merged[k] = pr.Value
		}
	}
	sort.Slice(order, func(i, j int) bool {
		ri, rj := inRank(order[i].in), inRank(order[j].in)
		if ri != rj {
			return ri < rj
		}
		return order[i].name < order[j].name
	})
	excluded := map[key]bool{}
	for i, x := range o.Policy.FingerprintExcludeParams {
		k := key{x.In, x.Name}
		if x.In == "header" {
			k.name = http.CanonicalHeaderKey(k.name)
		}
		if _, ok := merged[k]; ok && !b.ob(o).ownExclusions {
			b.rootExclUsed[fmt.Sprintf("excludeParameters[%d]", i)] = true
		} else if !ok && b.ob(o).ownExclusions {
			b.errs.addf("%sx-idempotent.fingerprint.excludeParameters[%d]: the operation declares no %s parameter %q", where, i, x.In, x.Name)
		}
		excluded[k] = true
	}
	noValidate := b.req.skipOperation(o.ID)
	for _, k := range order {
		p := merged[k]
		if p.In == "path" && !slices.Contains(o.PathParams, muxWildcard(p.Name)) {
			// No request can carry it: as a required parameter it would
			// refuse every request. A spec one cannot edit still generates.
			b.warnf(diag.WarnTyped, where, "path parameter %q is not in the path %s: it is ignored (no request field)", p.Name, o.Path)
			continue
		}
		prm := &Param{Name: p.Name, Key: p.Name, In: p.In, Required: p.Required || p.In == "path"}
		ploc := o.Location + "/parameters/" + p.In + "/" + jsonkit.EscapeToken(p.Name)
		want := goName(p.Name)
		b.names.fixed(b.ob(o).requestFields, &prm.Field, want, ploc, "parameter", rankComponent, closeness(p.Name, want), true)
		keyHeader := o.Idempotent && p.In == "header" && strings.EqualFold(p.Name, o.Policy.Header)
		prm.Fingerprint = !excluded[k] && !keyHeader && !o.credentialParam(p.In, p.Name)
		if p.In == "path" {
			prm.Key = muxWildcard(p.Name)
		}
		style, ok := paramStyle(p)
		if !ok {
			b.errs.addf("%s%s: style %q is not one of %s%s", where, prm.Where(), p.Style, strings.Join(sortedKeys(paramStyles), ", "), suggest.DidYouMean(p.Style, sortedKeys(paramStyles)))
		}
		sr := p.Schema
		schemaLoc := ploc + "/schema"
		if sr == nil && len(p.Content) > 0 {
			b.notMediaTypes(p.Content, strings.TrimSuffix(where, ": ")+" "+prm.Where())
			mt, media := pickMedia(p.Content)
			if media != nil {
				sr, style = media.Schema, idemimpl.StyleJSON
				schemaLoc = ploc + "/content/" + jsonkit.EscapeToken(mt) + "/schema"
				if !speaksJSON(mt) {
					b.warnf(diag.WarnTyped, strings.TrimSuffix(where, ": ")+" "+prm.Where(), "content %s is read as JSON", mt)
				}
			}
		}
		prm.Style = style
		prm.Explode = p.Explode == nil && (style == idemimpl.StyleForm || style == idemimpl.StyleDeepObject) || p.Explode != nil && *p.Explode
		b.paramType(prm, sr, nameHint{parent: b.ob(o).ident, suffix: want}, schemaLoc)
		if keyHeader {
			b.keyParam(o, prm, sr, where, noValidate)
		}
		if !prm.EngineKey || prm.KeyChecked { // the decoder, or the engine's CheckKey, validates it
			prm.Schema = b.req.index(sr, schemaLoc, noValidate)
		}
		o.Params = append(o.Params, prm)
	}
}

// keyParam decides whether the engine fills prm, the parameter that
// declares the operation's idempotency key header: the engine parses the
// key (x-idempotent.keyFormat) before the decoder runs, so the decoder does
// not read the header again and the handler's field holds the engine's
// parsed key, the one form of the key a handler sees (a format: uuid
// string's uuid.UUID from it). A key declared as anything else (an enum, a
// number, an array) is read as declared, with a warning. When the
// schema says more than the key format implies (a pattern, an enum, a
// length), or the parameter is required while the policy's key is not,
// prm.KeyChecked: the engine checks its parsed key against the schema
// (idem.Operation.CheckKey) before it reads the body.
func (b *builder) keyParam(o *Operation, prm *Param, sr *openapi3.SchemaRef, where string, noValidate bool) {
	at := strings.TrimSuffix(where, ": ") + " " + prm.Where()
	if prm.List || (prm.Type.Kind != GoBuiltin || prm.Type.Name != "string") && prm.Type.Kind != GoUUID {
		b.warnf(diag.WarnTyped, at, "the idempotency key header is not declared a string (or a format: uuid string): its request field holds the header as sent, KeyFromContext the key the engine parsed")
		return
	}
	prm.EngineKey = true
	if noValidate {
		return // the config turns the operation's validation off
	}
	prm.KeyChecked = prm.Required && !o.Policy.Required
	if sr == nil || sr.Value == nil {
		return
	}
	s := sr.Value
	samples, uuidKey := uuidKeys(o.Policy.KeyFormat)
	format := formatConst(s.Format, []string{openapi3.TypeString})
	prm.KeyChecked = prm.KeyChecked || s.Pattern != "" || len(s.Enum) > 0 || s.MinLength > 1 ||
		s.MaxLength != nil && *s.MaxLength < 255 || format != idemimpl.FormatNone && !(format == idemimpl.FormatUUID && uuidKey)
	if uuidKey {
		b.uuidKeyRefused(at, o.Policy.KeyFormat, samples, s)
	}
}

// uuidKeys are the sample UUIDs (lower case, as the engine writes a parsed
// key) that key format f accepts, and whether every key of f is a UUID
// (uuid, uuidv4, uuidv7): asked of the runtime's parser, so that a key
// format added there needs no case here.
func uuidKeys(f string) (samples []string, uuidOnly bool) {
	for _, k := range []string{"3f2504e0-4f89-41d3-9a0c-0305e82c3301", "01936b2e-8c4a-7b3e-9f1d-2a4c6e8f0b1d", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"} {
		if _, err := idem.ParseKey(k, idem.KeyFormat(f)); err == nil {
			samples = append(samples, k)
		}
	}
	_, err := idem.ParseKey("not-a-uuid", idem.KeyFormat(f))
	return samples, len(samples) > 0 && err != nil
}

// uuidKeyRefused warns when the schema of a UUID key's header parameter
// refuses every key the engine can give it: the check reads the parsed key,
// a UUID of the key format in lower case, so a pattern written for the
// header as sent (upper-case hex) or a length other than 36 turns every
// request away.
func (b *builder) uuidKeyRefused(at, keyFormat string, samples []string, s *openapi3.Schema) {
	const n = 36
	switch {
	case s.MaxLength != nil && *s.MaxLength < n || s.MinLength > n:
		b.warnf(diag.WarnRefused, at, "every key is refused: the engine's parsed key (x-idempotent.keyFormat %q) has %d characters, the schema's minLength/maxLength do not allow them", keyFormat, n)
	case s.Pattern != "":
		re, err := regexp.Compile(s.Pattern)
		if err != nil || len(samples) == 0 {
			return // reqschema warns about a pattern it cannot enforce
		}
		for _, k := range samples {
			if re.MatchString(k) {
				return
			}
		}
		b.warnf(diag.WarnRefused, at, "pattern %q refuses the keys the engine gives it (x-idempotent.keyFormat %q, lower case, e.g. %s): it is checked against the parsed key, not the header as sent", s.Pattern, keyFormat, samples[0])
	}
}

func inRank(in string) int {
	switch in {
	case "path":
		return 0
	case "query":
		return 1
	case "header":
		return 2
	}
	return 3
}

// paramStyles are OpenAPI's parameter styles.
var paramStyles = map[string]idemimpl.Style{
	"simple": idemimpl.StyleSimple, "form": idemimpl.StyleForm, "label": idemimpl.StyleLabel, "matrix": idemimpl.StyleMatrix,
	"spaceDelimited": idemimpl.StyleSpaceDelimited, "pipeDelimited": idemimpl.StylePipeDelimited, "deepObject": idemimpl.StyleDeepObject,
}

// paramStyle is a parameter's style, its location's default when it has
// none; false for a style OpenAPI does not define.
func paramStyle(p *openapi3.Parameter) (idemimpl.Style, bool) {
	if p.Style == "" {
		return map[string]idemimpl.Style{"path": idemimpl.StyleSimple, "header": idemimpl.StyleSimple, "query": idemimpl.StyleForm, "cookie": idemimpl.StyleForm}[p.In], true
	}
	style, ok := paramStyles[p.Style]
	return style, ok
}

// ParameterSchema is the schema a parameter's values are read with: its
// schema, or, for a parameter declared with content (content:
// application/json), the schema of the media type the generated decoder
// reads (JSON when declared); nil when it has neither. Conformance builds
// parameter values from it.
func ParameterSchema(p *openapi3.Parameter) *openapi3.SchemaRef {
	switch {
	case p == nil:
		return nil
	case p.Schema != nil || len(p.Content) == 0:
		return p.Schema
	}
	if _, media := pickMedia(p.Content); media != nil {
		return media.Schema
	}
	return nil
}

// paramType sets the Go type of a parameter's field: the schema's type, an
// array's element type for a list, a string when there is no schema.
func (b *builder) paramType(p *Param, sr *openapi3.SchemaRef, hint nameHint, loc string) {
	if sr == nil || sr.Value == nil {
		p.Type = GoType{Kind: GoBuiltin, Name: "string"}
		return
	}
	types, _ := typesOf(sr.Value)
	if len(types) == 1 && types[0] == openapi3.TypeArray && sr.Value.Items != nil && sr.Ref == "" {
		p.List = true
		p.Type = b.goType(sr.Value.Items, hint.plus("Item"), loc+"/items")
		return
	}
	p.Type = b.goType(sr, hint, loc)
}

// body builds the request body: the Go type of its preferred media type
// (JSON when declared) and every declared media type whose body decodes to
// that type, in order of preference.
func (b *builder) body(o *Operation, op *openapi3.Operation, where string) {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return
	}
	rb := op.RequestBody.Value
	if len(rb.Content) == 0 {
		return
	}
	b.notMediaTypes(rb.Content, strings.TrimSuffix(where, ": ")+" request body")
	noValidate := b.req.skipOperation(o.ID)
	body := &Body{Required: rb.Required}
	var firstSchema *openapi3.SchemaRef // the preferred media type's
	keys := sortedKeys(rb.Content)
	sort.SliceStable(keys, func(i, j int) bool { return mediaRank(keys[i]) < mediaRank(keys[j]) })
	for _, mt := range keys {
		if !isMediaType(mt) {
			continue
		}
		media := rb.Content[mt]
		dec := decoding(mt)
		loc := fmt.Sprintf("%s/requestBody/content/%s/schema", o.Location, jsonkit.EscapeToken(mt))
		var sr *openapi3.SchemaRef
		if media != nil {
			sr = media.Schema
		}
		if firstSchema == nil {
			firstSchema = sr
		}
		if dec == idemimpl.AsBytes && isBinarySchema(sr) {
			dec = idemimpl.AsBinary
		}
		var gt GoType
		switch dec {
		case idemimpl.AsBytes:
			gt = GoType{Kind: GoBytes}
		case idemimpl.AsBinary:
			gt = GoType{Kind: GoReader}
		case idemimpl.AsMultipart:
			b.fileParts = true
			gt = b.goType(sr, nameHint{parent: b.ob(o).ident, suffix: "RequestBody", alone: true}, loc)
			b.fileParts = false
		default:
			gt = b.goType(sr, nameHint{parent: b.ob(o).ident, suffix: "RequestBody", alone: true}, loc)
		}
		if body.Media == nil {
			body.MediaType, body.JSON, body.Type = mt, dec == idemimpl.AsJSON || dec == idemimpl.AsMergePatch, gt
		} else if !sameType(gt, body.Type) {
			why := fmt.Sprintf("its schema is not the one of %s, which types the body", body.MediaType)
			if sr != nil && firstSchema != nil && sr.Value == firstSchema.Value {
				why = fmt.Sprintf("it has the schema of %s, but idemgen reads %s as %s, not as %s", body.MediaType, mt, decodedAs(dec), decodedAs(body.Media[0].Decode))
			}
			b.warnf(diag.WarnRefused, strings.TrimSuffix(where, ": ")+" request body", "%s is not accepted (415): %s", mt, why)
			continue
		}
		m := &BodyMedia{Type: strings.ToLower(mt), Decode: dec}
		body.Stream = body.Stream || dec == idemimpl.AsBinary || dec == idemimpl.AsMultipart
		if dec != idemimpl.AsBytes && dec != idemimpl.AsBinary && media != nil {
			m.Schema = b.req.index(media.Schema, loc, noValidate)
			for _, name := range sortedKeys(media.Encoding) {
				if e := media.Encoding[name]; e != nil && e.Explode != nil && !*e.Explode && (dec == idemimpl.AsForm || dec == idemimpl.AsMultipart) {
					m.Unexploded = append(m.Unexploded, name)
				}
			}
			if dec == idemimpl.AsMultipart {
				m.JSONParts = b.jsonParts(media)
				m.FormParts = formParts(media)
			}
		}
		body.Media = append(body.Media, m)
	}
	if body.JSON && !body.Required && !body.Type.nilable() {
		body.Type = ptr(body.Type)
	}
	o.Body = body
}

// decoding is how a body of a declared media type is read.
func decoding(mt string) idemimpl.Decoding {
	mt = strings.ToLower(mt)
	switch {
	case mt == "application/merge-patch+json":
		return idemimpl.AsMergePatch
	case jsonkit.IsJSON(mt):
		return idemimpl.AsJSON
	case mt == "application/x-www-form-urlencoded":
		return idemimpl.AsForm
	case mt == "multipart/form-data":
		return idemimpl.AsMultipart
	case mt == "application/octet-stream":
		return idemimpl.AsBinary
	}
	return idemimpl.AsBytes
}

// isBinarySchema reports whether a body's schema declares binary content
// (type: string, format: binary), which is read as a stream.
func isBinarySchema(sr *openapi3.SchemaRef) bool {
	if sr == nil || sr.Value == nil {
		return false
	}
	types, _ := typesOf(sr.Value)
	return sr.Value.Format == "binary" && (len(types) == 0 || len(types) == 1 && types[0] == openapi3.TypeString)
}

// decodedAs says in words how a body of decoding dec is read.
func decodedAs(dec idemimpl.Decoding) string {
	switch dec {
	case idemimpl.AsJSON, idemimpl.AsMergePatch:
		return "JSON"
	case idemimpl.AsForm:
		return "a form"
	case idemimpl.AsMultipart:
		return "multipart/form-data"
	case idemimpl.AsBinary:
		return "a binary stream"
	}
	return "raw bytes"
}

// mediaRank orders request media types: JSON, then forms, then the rest.
func mediaRank(mt string) int {
	switch decoding(mt) {
	case idemimpl.AsJSON:
		return 0
	case idemimpl.AsMergePatch:
		return 1
	case idemimpl.AsForm:
		return 2
	case idemimpl.AsMultipart:
		return 3
	}
	return 4
}

// checkExclusions refuses fingerprint exclusions that name nothing in the
// request body of any decoded media type.
func (b *builder) checkExclusions(o *Operation, where string) {
	if !o.Idempotent || len(o.Policy.FingerprintExclude) == 0 {
		return
	}
	for i, ptr := range o.Policy.FingerprintExclude {
		toks, err := jsonkit.ParsePointer(ptr)
		if err != nil {
			continue // the policy check reports it
		}
		found := false
		media := "it has no request body"
		if o.Body != nil {
			media = "decoded as " + o.Body.mediaList()
			for _, m := range o.Body.Media {
				if m.Decode != idemimpl.AsBytes && m.Decode != idemimpl.AsBinary && b.req.resolves(m.Schema, toks) {
					found = true
				}
			}
		}
		if found && !b.ob(o).ownExclusions {
			b.rootExclUsed[fmt.Sprintf("exclude[%d]", i)] = true
		} else if !found && b.ob(o).ownExclusions {
			b.errs.addf("%sx-idempotent.fingerprint.exclude[%d]: %s names no member of the request body (%s)", where, i, ptr, media)
		}
	}
}

// checkRootExclusions refuses root fingerprint exclusions that name
// nothing in any operation they apply to.
func (b *builder) checkRootExclusions(root *policyPatch) {
	if root == nil || !root.set["fingerprint"] {
		return
	}
	for i, ptr := range root.policy.FingerprintExclude {
		if !b.rootExclUsed[fmt.Sprintf("exclude[%d]", i)] {
			b.errs.addf("%s: x-idempotent.fingerprint.exclude[%d]: %s names no member of any idempotent operation's request body", b.file, i, ptr)
		}
	}
	for i, x := range root.policy.FingerprintExcludeParams {
		if !b.rootExclUsed[fmt.Sprintf("excludeParameters[%d]", i)] {
			b.errs.addf("%s: x-idempotent.fingerprint.excludeParameters[%d]: no idempotent operation declares %s parameter %q", b.file, i, x.In, x.Name)
		}
	}
}

func (bd *Body) mediaList() string {
	var out []string
	for _, m := range bd.Media {
		out = append(out, m.Type)
	}
	return strings.Join(out, ", ")
}

// skipOperation reports whether the config turns validation off for the
// operation.
func (t *reqTable) skipOperation(id string) bool {
	if t.skip[id] {
		t.used[id] = true
	}
	return t.skip[id]
}

// checkSkip reports the config's validation.skip entries that named
// neither an operation nor a schema of a request.
func (t *reqTable) checkSkip(file string) {
	for _, s := range sortedKeys(t.skip) {
		if !t.used[s] {
			t.b.errs.addf("%s: config validation.skip: %q names no operationId and no schema or property of a request body or parameter", file, s)
		}
	}
}

// resolves reports whether the pointer toks can name a member of values of
// schema idx: a declared property (also through allOf, anyOf and oneOf),
// an additional property, or an array item.
func (t *reqTable) resolves(idx int, toks []string) bool {
	return t.resolve(idx, toks, map[int]bool{})
}

func (t *reqTable) resolve(idx int, toks []string, seen map[int]bool) bool {
	if len(toks) == 0 {
		return true
	}
	if idx <= 0 || idx >= len(t.schemas) || seen[idx] {
		return idx == 0 // any value may hold anything
	}
	seen[idx] = true
	defer delete(seen, idx)
	s := t.schemas[idx]
	if s == nil {
		return false
	}
	if p, ok := s.Properties[toks[0]]; ok && t.resolve(t.byKey[reqKey{p.Value, t.noValidate[idx]}], toks[1:], seen) {
		return true
	}
	types, _ := typesOf(s)
	objectish := len(types) == 0 || slices.Contains(types, openapi3.TypeObject)
	if ap := s.AdditionalProperties; objectish && (ap.Schema != nil || ap.Has == nil && len(s.Properties) == 0 && s.Items == nil && len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) == 0) {
		if ap.Schema == nil || t.resolve(t.byKey[reqKey{ap.Schema.Value, t.noValidate[idx]}], toks[1:], seen) {
			return true
		}
	}
	if s.Items != nil {
		if _, err := strconv.Atoi(toks[0]); err == nil && t.resolve(t.byKey[reqKey{s.Items.Value, t.noValidate[idx]}], toks[1:], seen) {
			return true
		}
	}
	for _, refs := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, m := range refs {
			if m != nil && t.resolve(t.byKey[reqKey{m.Value, t.noValidate[idx]}], toks, seen) {
				return true
			}
		}
	}
	return false
}

// sameType reports whether two Go types are the same (names of named types
// are not decided yet when bodies are built).
func sameType(a, b GoType) bool {
	if a.Kind != b.Kind || a.Name != b.Name || a.Named != b.Named || (a.Elem == nil) != (b.Elem == nil) {
		return false
	}
	return a.Elem == nil || sameType(*a.Elem, *b.Elem)
}
