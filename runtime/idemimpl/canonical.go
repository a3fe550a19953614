package idemimpl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// Request is the decoding state of one request: the canonical form of what
// the generated decoder read from it, which becomes idem.Prepared.Canonical.
//
// The canonical form is the canonical JSON encoding (AppendJSON) of one
// object: {"body": <decoded body>, "cookie": {...}, "header": {...},
// "media": <media type essence>, "path": {...}, "query": {...}}, with every
// declared parameter the request carries, absent ones left out, header names
// lower-cased.
type Request struct {
	r      *http.Request
	params map[string]*Value // by location: path, query, header, cookie
	body   *Value
	media  string
}

// NewRequest starts decoding r.
func NewRequest(r *http.Request) *Request {
	return &Request{r: r, params: map[string]*Value{}}
}

// Param records the raw values of the declared parameter key in location in
// (path, query, header, cookie) in the canonical form; an absent parameter
// is left out.
func (q *Request) Param(in, key string) {
	vs := lookup(q.r, in, key)
	if len(vs) == 0 {
		return
	}
	name := key
	if in == "header" {
		name = strings.ToLower(key)
	}
	v := Value{Kind: KindString, Str: vs[0]}
	if len(vs) > 1 {
		v = Value{Kind: KindArray}
		for _, s := range vs {
			v.Items = append(v.Items, Value{Kind: KindString, Str: s})
		}
	}
	q.param(in).Members = append(q.param(in).Members, Member{Name: name, Value: v})
}

func (q *Request) param(in string) *Value {
	p := q.params[in]
	if p == nil {
		p = &Value{Kind: KindObject}
		q.params[in] = p
	}
	return p
}

// JSONBody decodes a JSON request body strictly (ParseJSON) and unmarshals
// v from the canonical encoding of the decoded value, so what the handler
// sees is what the fingerprint covers. An empty (or all white space) body
// leaves v alone, or is an *idem.RequestError when required.
func (q *Request) JSONBody(body []byte, v any, required bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if required {
			return bodyErr(ErrMissing)
		}
		return nil
	}
	tree, err := ParseJSON(body)
	if err != nil {
		return bodyErr(err)
	}
	q.setBody(tree)
	if err := json.Unmarshal(AppendJSON(nil, &tree, nil), v); err != nil {
		return bodyErr(unmarshalError(err))
	}
	return nil
}

// RawBody returns a body that is not decoded, recording its bytes (base64)
// in the canonical form; an empty one is an *idem.RequestError when
// required.
func (q *Request) RawBody(body []byte, required bool) ([]byte, error) {
	b, err := RawBody(body, required)
	if err == nil && len(body) > 0 {
		q.setBody(Value{Kind: KindString, Str: base64.StdEncoding.EncodeToString(body)})
	}
	return b, err
}

func (q *Request) setBody(v Value) {
	q.body = &v
	if q.r != nil {
		q.media = MediaTypeEssence(q.r.Header.Get("Content-Type"))
	}
}

// Canonical returns the canonical form, leaving out the body members at the
// RFC 6901 pointers of exclude (the operation's fingerprint exclusions,
// which idem.New has validated; an invalid pointer excludes nothing).
func (q *Request) Canonical(exclude []string) []byte {
	doc := Value{Kind: KindObject}
	if q.body != nil {
		doc.Members = append(doc.Members, Member{Name: "body", Value: *q.body}, Member{Name: "media", Value: Value{Kind: KindString, Str: q.media}})
	}
	for in, p := range q.params {
		p.SortMembers()
		doc.Members = append(doc.Members, Member{Name: in, Value: *p})
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

// MediaTypeEssence returns the lower-cased type/subtype of a Content-Type
// header value, without parameters; "" when there is none.
func MediaTypeEssence(ct string) string {
	if strings.TrimSpace(ct) == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt
}
