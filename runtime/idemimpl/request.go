package idemimpl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// Request is the decoding state of one request in a generated decoder. It
// decodes each declared parameter and the body into a Value, validates it
// against the operation's schemas, unmarshals the typed request from the
// Value's canonical encoding and records that encoding, which becomes
// idem.Prepared.Canonical. Violations are collected and returned together
// by Err.
//
// The canonical form is the canonical JSON encoding (AppendJSON) of one
// object: {"body": <decoded body>, "cookie": {...}, "header": {...},
// "media": <media type>, "path": {...}, "query": {...}}, with every
// fingerprinted parameter the request carries (absent ones left out, header
// names lower-cased) and the body's media type reduced to what changes its
// meaning (canonicalMedia).
type Request struct {
	r       *http.Request
	t       *Schemas
	params  map[string]*Value // by location: path, query, header, cookie
	body    *Value
	media   string
	out     []idemproblem.Violation
	err     error // a 415, which ends decoding
	query   url.Values
	queryOK bool
	spools  []*spooled // streamed content in temporary files, removed by Close
	lim     Limits
	// validated registers the body's encoding while its type decodes it.
	validated validatedValue
}

// NewRequest starts decoding r against the schemas of t (nil: no schemas).
func NewRequest(r *http.Request, t *Schemas) *Request {
	if t == nil {
		t = &Schemas{}
	}
	t.compile()
	return &Request{r: r, t: t, lim: DefaultLimits()}
}

// Err returns the outcome of decoding: nil, an error wrapping
// idem.ErrUnsupportedMediaType, or an *idemproblem.ValidationError listing every
// violation found. It is never inlined: each generated decoder calls it,
// and inlined copies cost the compiler more than the call costs at run time.
//
//go:noinline
func (q *Request) Err() error {
	if q.err != nil {
		return q.err
	}
	if len(q.out) > 0 {
		return &idemproblem.ValidationError{Violations: q.out}
	}
	return nil
}

// Style is how a parameter is serialised (OpenAPI's style, plus JSON for a
// parameter declared with content: application/json).
type Style uint8

const (
	StyleSimple Style = iota
	StyleForm
	StyleLabel
	StyleMatrix
	StyleSpaceDelimited
	StylePipeDelimited
	StyleDeepObject
	StyleJSON
)

// Param describes one declared parameter.
type Param struct {
	In       string // path, query, header, cookie
	Name     string // as declared
	Key      string // lookup key: Name, or the ServeMux wildcard of a path parameter
	Schema   int    // index in the Schemas table
	Style    Style
	Explode  bool
	Required bool
	// Fingerprint is whether the parameter is part of the canonical form:
	// every parameter but the idempotency key header and those the
	// operation's x-idempotent.fingerprint excludes.
	Fingerprint bool
}

// Param decodes, validates and records parameter p and unmarshals it into
// target, a pointer to the request field. An absent optional parameter
// without a default leaves target alone.
func (q *Request) Param(p *Param, target any) {
	vd := &validator{t: q.t, in: p.In, name: p.Name, values: newBudget(q.lim.MaxValues)}
	v, ok := q.paramValue(p, vd)
	if !ok {
		if d := q.defaultOf(p.Schema); d != nil {
			v, ok = *d, true
		} else if p.Required {
			vd.fail("required", "is required")
		}
	}
	if ok && len(vd.out) == 0 {
		vd.validate(&v, p.Schema)
	}
	if ok && len(vd.out) == 0 && q.t.handlerView(&v, p.Schema, true) {
		vd.validate(&v, p.Schema) // see Body
	}
	q.out = append(q.out, vd.out...)
	if !ok || len(vd.out) > 0 {
		return
	}
	q.unmarshal(vd, &v, 0, 0, target)
	if p.Fingerprint {
		name := p.Name
		if p.In == "header" {
			name = strings.ToLower(name)
		}
		if q.params == nil {
			q.params = map[string]*Value{}
		}
		loc := q.params[p.In]
		if loc == nil {
			loc = &Value{Kind: KindObject}
			q.params[p.In] = loc
		}
		loc.Members = append(loc.Members, Member{Name: name, Value: v})
	}
}

func (q *Request) defaultOf(idx int) *Value {
	if idx <= 0 || idx >= len(q.t.List) {
		return nil
	}
	return q.t.compiled[idx].def
}

// rawValues returns the values of a parameter as sent, and whether it is
// present.
func (q *Request) rawValues(p *Param, vd *validator) ([]string, bool) {
	switch p.In {
	case "path":
		v := q.r.PathValue(p.Key)
		return []string{v}, v != ""
	case "query":
		vs, ok := q.parsedQuery(vd)[p.Key]
		return vs, ok
	case "header":
		vs := q.r.Header.Values(p.Key)
		return vs, len(vs) > 0
	case "cookie":
		n := 0
		for _, line := range q.r.Header["Cookie"] {
			n += strings.Count(line, ";") + 1
		}
		if n > q.lim.MaxFields {
			vd.fail("maxFields", fmt.Sprintf("the request has more than %d cookies", q.lim.MaxFields))
			return nil, true
		}
		var vs []string
		for _, c := range q.r.CookiesNamed(p.Key) {
			vs = append(vs, c.Value)
		}
		return vs, len(vs) > 0
	}
	return nil, false
}

// parsedQuery parses the query once, strictly: a malformed escape is a
// violation rather than a silently dropped parameter.
func (q *Request) parsedQuery(vd *validator) url.Values {
	if !q.queryOK {
		q.queryOK = true
		raw := q.r.URL.RawQuery
		if n := strings.Count(raw, "&") + 1; raw != "" && n > q.lim.MaxFields {
			q.query = url.Values{}
			q.out = append(q.out, idemproblem.Violation{In: "query", Rule: "maxFields", Detail: fmt.Sprintf("the query string has more than %d parameters", q.lim.MaxFields)})
			return q.query
		}
		var err error
		q.query, err = url.ParseQuery(raw)
		if err != nil {
			q.out = append(q.out, idemproblem.Violation{In: "query", Rule: "syntax", Detail: "the query string is malformed: " + strings.TrimPrefix(err.Error(), "invalid URL escape ")})
		}
	}
	return q.query
}

// paramValue decodes parameter p into a Value as its style says.
func (q *Request) paramValue(p *Param, vd *validator) (Value, bool) {
	if p.Style == StyleDeepObject {
		n, ok := deepObjectNode(q.parsedQuery(vd), p.Key, vd, &q.lim)
		if !ok || n == nil {
			return Value{}, ok
		}
		return vd.coerce(n, p.Schema), true
	}
	vs, ok := q.rawValues(p, vd)
	if !ok || len(vd.out) > 0 {
		return Value{}, ok
	}
	for _, s := range vs {
		// Header values may carry any byte above 0x7f; the canonical form
		// and the typed request hold text, into which another encoding
		// would be turned silently (two values into one U+FFFD).
		if !utf8.ValidString(s) {
			vd.fail("syntax", "is not valid UTF-8")
			return Value{}, true
		}
	}
	if p.Style == StyleJSON {
		if len(vs) > 1 {
			vd.fail("syntax", fmt.Sprintf("is given %d times", len(vs)))
			return Value{}, true
		}
		v, err := parseJSON([]byte(vs[0]), 0, q.lim.MaxDepth, vd.values)
		var se *SyntaxError
		if errors.As(err, &se) && se.Rule != "" {
			vd.fail(se.Rule, se.Error())
		} else if err != nil {
			vd.fail("syntax", "is not JSON: "+err.Error())
		}
		return v, true
	}
	shape := q.t.shape(p.Schema)
	n := &formNode{}
	switch {
	case shape == TypeArray:
		items := 0
		for _, s := range vs {
			items += strings.Count(s, delimiter(p.Style)) + 1
		}
		if !vd.values.fits(items + 1) {
			vd.fail("maxValues", vd.values.detail())
			return Value{}, true
		}
		for _, s := range vs {
			if p.Style == StyleForm && p.Explode && p.In == "query" {
				n.vals = append(n.vals, s)
				continue
			}
			n.vals = append(n.vals, strings.Split(s, delimiter(p.Style))...)
		}
	case shape == TypeObject && (p.Style == StyleSimple || p.Style == StyleForm):
		if len(vs) > 1 {
			vd.fail("syntax", fmt.Sprintf("is given %d times", len(vs)))
			return Value{}, true
		}
		if !vd.values.fits(strings.Count(vs[0], ",") + 2) {
			vd.fail("maxValues", vd.values.detail())
			return Value{}, true
		}
		if !objectNode(n, vs[0], p.Explode, vd) {
			return Value{}, true
		}
	default:
		if p.In == "header" && len(vs) > 1 {
			vs = []string{strings.Join(vs, ",")}
		}
		n.vals = vs
	}
	return vd.coerce(n, p.Schema), true
}

func delimiter(s Style) string {
	switch s {
	case StyleSpaceDelimited:
		return " "
	case StylePipeDelimited:
		return "|"
	}
	return ","
}

// objectNode reads a simple or form object: "R,100,G,200" or, exploded,
// "R=100,G=200".
func objectNode(n *formNode, s string, explode bool, vd *validator) bool {
	parts := strings.Split(s, ",")
	if explode {
		for _, kv := range parts {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				vd.fail("syntax", fmt.Sprintf("%q is not a name=value pair", kv))
				return false
			}
			n.child(k).vals = append(n.child(k).vals, v)
		}
		return true
	}
	if len(parts)%2 != 0 {
		vd.fail("syntax", "must list names and values in pairs")
		return false
	}
	for i := 0; i < len(parts); i += 2 {
		n.child(parts[i]).vals = append(n.child(parts[i]).vals, parts[i+1])
	}
	return true
}

// schemaAt is entry idx, or the schema of any value for 0 or out of range.
func (t *Schemas) schemaAt(idx int) *Schema {
	if idx > 0 && idx < len(t.List) {
		return &t.List[idx]
	}
	return &Schema{}
}

// prop is the schema of property name of entry idx (any value when it
// declares none).
func (t *Schemas) prop(idx int, name string) *Schema {
	if p := findProp(t.schemaAt(idx).Props, name); p != nil {
		return t.schemaAt(p.Schema)
	}
	return &Schema{}
}

// shape is the JSON type a parameter's schema takes when it has one shape:
// TypeArray, TypeObject, or 0 for a scalar or a mix.
func (t *Schemas) shape(idx int) Types {
	if idx <= 0 || idx >= len(t.List) {
		return 0
	}
	s := &t.List[idx]
	switch {
	case s.Types == TypeArray || s.Types == TypeArray|TypeNull:
		return TypeArray
	case s.Types == TypeObject || s.Types == TypeObject|TypeNull || s.Types == 0 && len(s.Props) > 0:
		return TypeObject
	}
	return 0
}

// Media is one media type an operation's request body may have.
type Media struct {
	// Type is the declared media type range: "application/json",
	// "application/*", "*/*".
	Type   string
	Decode Decoding
	Schema int
	// Unexploded lists the form properties serialised as one
	// comma-separated value (an encoding object with explode: false).
	Unexploded []string
	// JSONParts lists the top-level properties of a multipart/form-data
	// body whose parts hold JSON (an encoding contentType of JSON, or an
	// object property without an encoding): such a part is parsed as JSON
	// and typed by the property's schema; an array property takes one
	// part per item, or one part holding the whole array.
	JSONParts []string
	// FormParts lists the top-level properties of a multipart/form-data
	// body whose part holds an application/x-www-form-urlencoded form (an
	// encoding contentType of it): the part's members, in bracket
	// notation, are the property's, as if sent as parts name[member].
	FormParts []string
}

// Decoding is how a body of a media type is decoded.
type Decoding uint8

const (
	AsJSON       Decoding = iota // application/json and +json
	AsMergePatch                 // application/merge-patch+json (RFC 7396)
	AsForm                       // application/x-www-form-urlencoded
	AsBytes                      // anything else: the bytes as sent
	AsMultipart                  // multipart/form-data, read as a stream (BodyStream)
	AsBinary                     // application/octet-stream or a binary schema: an io.Reader (BodyStream)
)

// Body describes an operation's request body.
type Body struct {
	Required bool
	Media    []Media // in order of preference
	// ContentEncoding: the operation declares a Content-Encoding header
	// parameter, so a body in any content coding is taken as sent (as its
	// media type says: bytes, usually), for the handler to decode. Without
	// it, a body whose Content-Encoding is not identity is refused with 415
	// (idem.ErrContentEncoding), never read as if it were not encoded.
	ContentEncoding bool
}

// Body decodes the request body: it picks the declared media type the
// Content-Type names (415 when none; without a Content-Type, the only
// declared one, or JSON), decodes the body into a Value, validates it and
// unmarshals target from its canonical encoding. target is a pointer to
// the request's Body field; for a AsBytes media type it is a *[]byte or
// an *io.Reader.
func (q *Request) Body(body []byte, b *Body, target any) {
	var ct string
	if v := q.r.Header["Content-Type"]; len(v) > 0 { // Get, without canonicalizing its constant
		ct = v[0]
	}
	if len(body) == 0 {
		if b.Required {
			q.out = append(q.out, idemproblem.Violation{In: "body", Pointer: "#", Rule: "required", Detail: "a request body is required"})
		}
		return
	}
	if q.err = q.coding(b); q.err != nil {
		return
	}
	m, media, err := pickMedia(b, ct)
	if err != nil {
		q.err = err
		return
	}
	vd := &validator{t: q.t, in: "body", values: newBudget(q.lim.MaxValues)}
	var v Value
	switch m.Decode {
	case AsJSON, AsMergePatch:
		tree, err := parseJSON(body, 0, q.lim.MaxDepth, vd.values)
		if err != nil {
			q.syntax(err)
			return
		}
		v = tree
		if m.Decode == AsMergePatch {
			vd.mode = modePatch
		}
	case AsForm:
		n, err := parseForm(string(body), vd.schema(m.Schema), &q.lim)
		if err == nil {
			err = splitUnexploded(n, m.Unexploded, vd.values)
		}
		if err != nil {
			q.syntax(err)
			return
		}
		v = vd.coerce(n, m.Schema)
	default:
		sum := sha256.Sum256(body)
		q.setBody(Value{Kind: KindString, Str: "sha-256:" + hex.EncodeToString(sum[:])}, media)
		switch t := target.(type) {
		case *[]byte:
			*t = body
		case *io.Reader:
			*t = bytes.NewReader(body)
		}
		return
	}
	if len(vd.out) == 0 {
		vd.validate(&v, m.Schema)
	}
	// The handler sees the value with its defaults and without the members
	// its type drops, so that value must satisfy the schema too: two items
	// that differ only in a member one of them leaves to its default, or
	// only in a member neither keeps, are duplicates under uniqueItems.
	if len(vd.out) == 0 && q.t.handlerView(&v, m.Schema, vd.mode != modePatch) {
		vd.validate(&v, m.Schema)
	}
	if len(vd.out) > 0 {
		q.out = append(q.out, vd.out...)
		return
	}
	q.unmarshal(vd, &v, m.Schema, len(body), target)
	q.setBody(v, media)
}

func (q *Request) syntax(err error) {
	var se *SyntaxError
	ptr, rule := "#", "syntax"
	msg := err.Error()
	if errors.As(err, &se) {
		ptr += se.Pointer
		msg = se.Msg
		if se.Offset >= 0 {
			msg += " (byte " + strconv.FormatInt(se.Offset, 10) + ")"
		}
		if se.Rule != "" {
			rule = se.Rule
		}
	}
	q.out = append(q.out, idemproblem.Violation{In: "body", Pointer: ptr, Rule: rule, Detail: msg})
}

func (q *Request) setBody(v Value, media string) {
	q.body = &v
	q.media = media
}

// handlerView makes v what the typed request will hold: undeclared
// members its type drops are removed (prune), then defaults added (not to
// merge patches). It reports whether v changed.
func (t *Schemas) handlerView(v *Value, idx int, defaults bool) bool {
	changed := t.prune(v, idx)
	if defaults {
		changed = t.applyDefaults(v, idx) || changed
	}
	return changed
}

// Canonical returns the canonical form, leaving out the body members at the
// RFC 6901 pointers of exclude (the operation's fingerprint exclusions,
// which idem.New has validated; an invalid pointer excludes nothing).
func (q *Request) Canonical(exclude []string) []byte {
	doc := Value{Kind: KindObject}
	if q.body != nil {
		doc.Members = append(doc.Members, Member{Name: "body", Value: *q.body}, Member{Name: "media", Value: Value{Kind: KindString, Str: q.media}})
	}
	for _, in := range []string{"cookie", "header", "path", "query"} {
		if p := q.params[in]; p != nil {
			p.SortMembers()
			doc.Members = append(doc.Members, Member{Name: in, Value: *p})
		}
	}
	doc.SortMembers()
	var ex [][]string
	if len(exclude) > 0 {
		ps, _ := ParsePointers(exclude...)
		for _, p := range ps {
			ex = append(ex, append([]string{"body"}, p...))
		}
	}
	return AppendJSON(make([]byte, 0, 256), &doc, ex)
}
