package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator"
	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// Request is a request that the spec describes as valid for one operation,
// built by the same value generator as the conformance checks: the body
// from the spec's example or generated from the request schema (with its
// optional members, where that still validates), encoded in the
// operation's preferred media type (JSON, a form in bracket notation,
// multipart/form-data, or raw bytes); every query parameter and the
// required path, header and cookie parameters serialised in their declared
// style; and a credential for the first alternative of its security whose
// schemes the spec defines.
type Request struct {
	Operation string // operation id
	Method    string
	// Target is the path with its parameters filled in, and the query.
	Target    string
	Header    http.Header // Content-Type included when there is a body
	Body      []byte
	KeyHeader string // the idempotency key's header; "" when the operation is not idempotent
	Source    string // where the body came from
	Err       error  // why no request could be built; the rest is unset
	Malformed []Malformed
	keyFormat string
}

// NewKey returns a fresh idempotency key in the operation's key format.
func (q Request) NewKey() string {
	p := opRun{o: &model.Operation{}}
	p.o.Policy.KeyFormat = q.keyFormat
	return p.newKey()
}

// Malformed is a request the operation's decoders must refuse with 400: a
// body not parseable or with a member of the wrong type, or a query
// parameter (a member of a deepObject one) of the wrong type. Target and
// Body are the Request's where they are not what is malformed.
type Malformed struct {
	What   string
	Target string
	Body   []byte
}

// Requests loads the spec and builds one valid Request for each of its
// operations, in the spec model's order. The error is for a spec that
// does not load.
func Requests(spec string, specData []byte) ([]Request, error) {
	s, err := generator.Load(generator.Config{Spec: spec, SpecData: specData})
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: Config{Spec: spec, Bodies: map[string][]byte{}, Params: map[string]string{}}, spec: s}
	out := make([]Request, 0, len(s.Model.Operations))
	for _, o := range s.Model.Operations {
		out = append(out, r.validRequest(o))
	}
	return out, nil
}

func (r *runner) validRequest(o *model.Operation) Request {
	q := Request{Operation: o.ID, Method: o.Method, Header: http.Header{}}
	p := &opRun{r: r, o: o, kin: r.spec.Operation(o)}
	q.KeyHeader, q.keyFormat = p.keyHeader(), o.Policy.KeyFormat
	if err := p.keyFormatKnown(); err != nil {
		q.Err = err
		return q
	}
	if err := p.validBody(&q); err != nil {
		q.Err = err
		return q
	}
	path, query := o.Path, url.Values{}
	type wrongParam struct {
		p     *model.Param
		v     any
		where string
	}
	var wrong []wrongParam
	for _, prm := range p.allParams() {
		pr := prm.Value
		if pr.In == "header" && strings.EqualFold(pr.Name, q.KeyHeader) {
			continue
		}
		if !pr.Required && pr.In != "query" {
			continue
		}
		gp := p.param(pr)
		if gp == nil {
			continue
		}
		sr := model.ParameterSchema(pr)
		v, err := valueOf(sr, true)
		if err != nil {
			if pr.Required {
				q.Err = fmt.Errorf("%s: %w", gp.Where(), err)
				return q
			}
			continue
		}
		switch pr.In {
		case "path":
			path = strings.ReplaceAll(path, "{"+pr.Name+"}", url.PathEscape(styled(gp, v)))
		case "query":
			addQuery(query, gp, v)
			if w, where, ok := wrongTyped(sr, v, gp.Style == idemimpl.StyleJSON); ok {
				wrong = append(wrong, wrongParam{gp, w, where})
			}
		case "header":
			q.Header.Set(pr.Name, styled(gp, v))
		case "cookie":
			q.Header.Add("Cookie", (&http.Cookie{Name: pr.Name, Value: styled(gp, v)}).String())
		}
	}
	for _, alt := range o.Security {
		// The first alternative that can hold: all its schemes defined.
		ok := true
		for _, use := range alt {
			ok = ok && use.Scheme.Defined()
		}
		if !ok {
			continue
		}
		for _, use := range alt {
			credential(&q, query, use.Scheme)
		}
		break
	}
	q.Target = path
	if len(query) > 0 {
		q.Target += "?" + query.Encode()
	}
	for i := range q.Malformed {
		q.Malformed[i].Target = q.Target
	}
	for _, w := range wrong {
		bad := url.Values{}
		for k, vs := range query {
			if k != w.p.Name && !strings.HasPrefix(k, w.p.Name+"[") {
				bad[k] = vs
			}
		}
		addQuery(bad, w.p, w.v)
		what := w.p.Where()
		if w.where != "" {
			what += " member " + w.where
		}
		q.Malformed = append(q.Malformed, Malformed{What: what + " of the wrong type", Target: path + "?" + bad.Encode(), Body: q.Body})
	}
	return q
}

// wrongTyped returns v with its first scalar (in JSON pointer order) that
// can be of the wrong type replaced by one, checked invalid by the schema:
// a number for a string (in JSON only), a word for a number, boolean or
// enum member. where is the pointer ("" for v itself).
func wrongTyped(sr *openapi3.SchemaRef, v any, isJSON bool) (any, string, bool) {
	for _, leaf := range leaves(v, "") {
		sub := sr
		if leaf != "" {
			sub = schemaAt(sr, leaf)
		}
		if sub == nil || sub.Value == nil || len(sub.Value.AnyOf)+len(sub.Value.OneOf)+len(sub.Value.AllOf) > 0 {
			continue
		}
		var bad any
		switch t := typeOf(sub.Value); {
		case len(sub.Value.Enum) > 0 || t == openapi3.TypeInteger || t == openapi3.TypeNumber || t == openapi3.TypeBoolean:
			bad = "conformance-wrong-type"
		case isJSON && t == openapi3.TypeString:
			bad = json.Number("12345")
		default:
			continue
		}
		cand := replaceAt(v, leaf, bad)
		if validate(sr, cand) != nil {
			return cand, leaf, true
		}
	}
	return nil, "", false
}

// allParams are the operation's parameters with those of its path item.
func (p *opRun) allParams() openapi3.Parameters {
	var params openapi3.Parameters
	if item := p.r.spec.Doc.Paths.Value(p.o.Path); item != nil {
		params = append(params, item.Parameters...)
	}
	if p.kin != nil {
		params = append(params, p.kin.Parameters...)
	}
	var out openapi3.Parameters
	for i, pr := range params {
		if pr == nil || pr.Value == nil {
			continue
		}
		overridden := false
		for _, later := range params[i+1:] {
			overridden = overridden || later != nil && later.Value != nil && later.Value.In == pr.Value.In && later.Value.Name == pr.Value.Name
		}
		if !overridden {
			out = append(out, pr)
		}
	}
	return out
}

// param is the model's parameter for pr: its style and explode resolved.
func (p *opRun) param(pr *openapi3.Parameter) *model.Param {
	for _, gp := range p.o.Params {
		if gp.In == pr.In && gp.Name == pr.Name {
			return gp
		}
	}
	return nil
}

// valueOf generates a value of the schema, with its optional members when
// full and the result still validates.
func valueOf(sr *openapi3.SchemaRef, full bool) (any, error) {
	v, err := generate(sr, 0)
	if err != nil {
		return nil, err
	}
	if err := validate(sr, v); err != nil {
		return nil, err
	}
	if full {
		if w := fill(sr, v, 0); validate(sr, w) == nil {
			return w, nil
		}
	}
	return v, nil
}

// fill adds the optional writable members of the objects in v (two levels
// deep; below, one member to an object that would be empty, which a form
// could not send) and one entry to maps, so that bodies exercise more of a
// decoder than their required members.
func fill(sr *openapi3.SchemaRef, v any, depth int) any {
	if sr == nil || sr.Value == nil || depth > maxDepth {
		return v
	}
	s := sr.Value
	switch c := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(c))
		for k, x := range c {
			out[k] = fill(child(sr, k, 0), x, depth+1)
		}
		props := s
		if len(s.AllOf) > 0 || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
			return out // which members belong to which part: left as generated
		}
		for _, name := range optional(props) {
			if depth > 2 && len(out) > 0 {
				break
			}
			x, err := generate(props.Properties[name], 0)
			if err != nil {
				continue
			}
			out[name] = fill(props.Properties[name], x, depth+1)
		}
		if len(props.Properties) == 0 && props.AdditionalProperties.Schema != nil && len(out) == 0 {
			if x, err := generate(props.AdditionalProperties.Schema, 0); err == nil {
				out["conformance"] = fill(props.AdditionalProperties.Schema, x, depth+1)
			}
		}
		return out
	case []any:
		out := make([]any, len(c))
		for i, x := range c {
			out[i] = fill(s.Items, x, depth+1)
		}
		return out
	}
	return v
}

// validBody sets q's body: the example or a generated value, encoded in
// the operation's preferred media type.
func (p *opRun) validBody(q *Request) error {
	o := p.o
	if o.Body == nil {
		return nil
	}
	var media *openapi3.MediaType
	if p.kin != nil && p.kin.RequestBody != nil && p.kin.RequestBody.Value != nil {
		media = p.kin.RequestBody.Value.Content.Get(o.Body.MediaType)
	}
	var sr *openapi3.SchemaRef
	if media != nil {
		sr = media.Schema
	}
	p.ctype, p.isJSON, p.schema = o.Body.MediaType, o.Body.JSON, sr
	mt := strings.ToLower(o.Body.MediaType)
	switch {
	case o.Body.JSON, mt == "application/x-www-form-urlencoded", mt == "multipart/form-data":
	default:
		// Anything else is bytes to the server: a binary or text body.
		q.Body, q.Source = []byte("conformance"), "bytes"
		q.Header.Set("Content-Type", o.Body.MediaType)
		return nil
	}
	var body any
	if ex, where, ok := example(media); ok && validate(sr, ex) == nil && mt != "multipart/form-data" {
		body, q.Source = ex, where
	} else {
		v, err := valueOf(sr, true)
		if err != nil {
			return fmt.Errorf("generating a body from the request schema: %w", err)
		}
		body, q.Source = v, "a body generated from the request schema"
	}
	if mt == "multipart/form-data" {
		b, ct, err := encodeMultipart(body, sr, multipartMedia(o.Body))
		if err != nil {
			return err
		}
		q.Body = b
		q.Header.Set("Content-Type", ct)
		return nil
	}
	q.Body = p.encode(body)
	q.Header.Set("Content-Type", o.Body.MediaType)
	q.Malformed = p.malformed(body)
	return nil
}

// malformed returns bodies the decoders must refuse: a JSON body cut short,
// and the body with one member of the wrong type (checked invalid by the
// schema).
func (p *opRun) malformed(body any) []Malformed {
	var out []Malformed
	if p.isJSON {
		out = append(out, Malformed{What: "JSON cut short", Body: []byte("{")})
	}
	if cand, leaf, ok := wrongTyped(p.schema, body, p.isJSON); ok && leaf != "" {
		out = append(out, Malformed{What: fmt.Sprintf("member %s of the wrong type", leaf), Body: p.encode(cand)})
	}
	return out
}

// multipartMedia is the model's multipart/form-data media type of a body:
// which parts hold JSON and which a form, as the generated server decodes
// them.
func multipartMedia(b *model.Body) *model.BodyMedia {
	for _, m := range b.Media {
		if m.Decode == idemimpl.AsMultipart {
			return m
		}
	}
	return &model.BodyMedia{}
}

// encodeMultipart writes the members of an object body as parts, as the
// model says the server reads them (bm): a binary string as a file part, a
// member of JSONParts as a JSON part (a list one part per item), a member
// of FormParts as one application/x-www-form-urlencoded part in bracket
// notation, others as text parts in bracket notation (a list whose name
// ends in [], PHP's file[], as that name repeated).
func encodeMultipart(body any, sr *openapi3.SchemaRef, bm *model.BodyMedia) ([]byte, string, error) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, "", fmt.Errorf("a multipart/form-data body that is not an object")
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	part := func(name, ctype string, content []byte) error {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"`, name))
		h.Set("Content-Type", ctype)
		pw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		_, err = pw.Write(content)
		return err
	}
	var add func(name string, v any, ps *openapi3.SchemaRef, jsonPart bool) error
	add = func(name string, v any, ps *openapi3.SchemaRef, jsonPart bool) error {
		switch c := v.(type) {
		case map[string]any:
			if jsonPart {
				b, _ := json.Marshal(c)
				return part(name, "application/json", b)
			}
			for _, k := range sortedMapKeys(c) {
				if err := add(name+"["+k+"]", c[k], child(ps, k, 0), false); err != nil {
					return err
				}
			}
			return nil
		case []any:
			for i, x := range c {
				n := name
				if !jsonPart && !strings.HasSuffix(name, "[]") {
					n = fmt.Sprintf("%s[%d]", name, i)
				}
				if err := add(n, x, child(ps, "0", 0), jsonPart); err != nil {
					return err
				}
			}
			return nil
		}
		if ps != nil && ps.Value != nil && (ps.Value.Format == "binary" || ps.Value.ContentMediaType != "") {
			fw, err := w.CreateFormFile(name, "conformance.bin")
			if err != nil {
				return err
			}
			_, err = fw.Write([]byte("conformance"))
			return err
		}
		return w.WriteField(name, scalarString(v))
	}
	for _, k := range sortedMapKeys(m) {
		var err error
		switch {
		case slices.Contains(bm.FormParts, k):
			err = part(k, "application/x-www-form-urlencoded", formEncode(m[k]))
		default:
			err = add(k, m[k], child(sr, k, 0), slices.Contains(bm.JSONParts, k))
		}
		if err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// simple serialises a value in style simple (path and header parameters).
// styled is a path, header or cookie parameter's value in its style: JSON
// for one declared with content (content: application/json), else simple.
func styled(p *model.Param, v any) string {
	if p.Style == idemimpl.StyleJSON {
		b, _ := json.Marshal(v)
		return string(b)
	}
	return simple(v, p.Explode)
}

func simple(v any, explode bool) string {
	switch c := v.(type) {
	case map[string]any:
		var parts []string
		for _, k := range sortedMapKeys(c) {
			if explode {
				parts = append(parts, k+"="+scalarString(c[k]))
			} else {
				parts = append(parts, k, scalarString(c[k]))
			}
		}
		return strings.Join(parts, ",")
	}
	return scalarString(v)
}

// addQuery adds a query parameter in its declared style.
func addQuery(q url.Values, p *model.Param, v any) {
	switch p.Style {
	case idemimpl.StyleJSON:
		b, _ := json.Marshal(v)
		q.Add(p.Name, string(b))
		return
	case idemimpl.StyleDeepObject:
		var rec func(prefix string, v any)
		rec = func(prefix string, v any) {
			switch c := v.(type) {
			case map[string]any:
				for _, k := range sortedMapKeys(c) {
					rec(prefix+"["+k+"]", c[k])
				}
			case []any:
				// As Stripe writes them: expand[]=a, lines[0][amount]=1.
				for i, x := range c {
					switch x.(type) {
					case map[string]any, []any:
						rec(fmt.Sprintf("%s[%d]", prefix, i), x)
					default:
						rec(prefix+"[]", x)
					}
				}
			default:
				q.Add(prefix, scalarString(c))
			}
		}
		rec(p.Name, v)
		return
	}
	sep := ","
	switch p.Style {
	case idemimpl.StyleSpaceDelimited:
		sep = " "
	case idemimpl.StylePipeDelimited:
		sep = "|"
	}
	switch c := v.(type) {
	case []any:
		if p.Explode {
			for _, x := range c {
				q.Add(p.Name, scalarString(x))
			}
			return
		}
		parts := make([]string, len(c))
		for i, x := range c {
			parts[i] = scalarString(x)
		}
		q.Add(p.Name, strings.Join(parts, sep))
	case map[string]any:
		if p.Explode {
			for _, k := range sortedMapKeys(c) {
				q.Add(k, scalarString(c[k]))
			}
			return
		}
		var parts []string
		for _, k := range sortedMapKeys(c) {
			parts = append(parts, k, scalarString(c[k]))
		}
		q.Add(p.Name, strings.Join(parts, sep))
	default:
		q.Add(p.Name, scalarString(c))
	}
}

// credential adds a made-up credential for the scheme where it looks.
func credential(q *Request, query url.Values, s *model.SecurityScheme) {
	switch s.Kind {
	case idemimpl.SchemeAPIKeyHeader:
		q.Header.Set(s.Param, "conformance")
	case idemimpl.SchemeAPIKeyQuery:
		query.Set(s.Param, "conformance")
	case idemimpl.SchemeAPIKeyCookie:
		q.Header.Add("Cookie", (&http.Cookie{Name: s.Param, Value: "conformance"}).String())
	case idemimpl.SchemeBearer:
		q.Header.Set("Authorization", "Bearer conformance")
	case idemimpl.SchemeBasic:
		q.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("conformance:secret")))
	case idemimpl.SchemeHTTP:
		q.Header.Set("Authorization", s.Param+" conformance")
	}
}
