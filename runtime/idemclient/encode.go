package idemclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemgen/idemgen/internal/jsonkit"
)

// The helpers below encode a generated request's parameters the way the
// generated server decodes them (runtime/idemimpl): scalars in their
// canonical text form, lists comma-separated except exploded query lists,
// which repeat the parameter.

// Format writes a parameter value as the server's parser reads it: time as
// RFC 3339, numbers in decimal, enums and strings as they are, anything
// else with fmt.
func Format(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case fmt.Stringer:
		return x.String()
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return rv.String() // a generated enum
	}
	return fmt.Sprint(v)
}

// PathParam is a path parameter's value, escaped for the URL path.
func PathParam[T any](v T) string { return url.PathEscape(Format(v)) }

// Query sets a query parameter.
func Query[T any](r *Request, name string, v T) { r.Query.Set(name, Format(v)) }

// QueryOptional sets a query parameter when v is not nil.
func QueryOptional[T any](r *Request, name string, v *T) {
	if v != nil {
		Query(r, name, *v)
	}
}

// QueryList sets a list query parameter: repeated when explode, else
// comma-separated. An empty list sends nothing.
func QueryList[T any](r *Request, name string, vs []T, explode bool) {
	if len(vs) == 0 {
		return
	}
	if !explode {
		r.Query.Set(name, join(vs))
		return
	}
	for _, v := range vs {
		r.Query.Add(name, Format(v))
	}
}

// jsonTree is v as encoding/json encodes it, decoded into maps, slices,
// strings, json.Numbers and bools: the generated types' JSON methods (a
// union's member, a map's keys) decide what is sent. nil for JSON null.
func jsonTree(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	err = dec.Decode(&tree)
	return tree, err
}

// QueryDeepObject sets a query parameter of style deepObject: v encoded
// as JSON would encode it, written in bracket notation as the server
// reads it (name[member]=value, name[member][0]=value); a value that
// encodes to a scalar (a union's scalar member) is name=value. A nil
// value, or one that encodes to null, sends nothing.
func QueryDeepObject(r *Request, name string, v any) error {
	tree, err := jsonTree(v)
	if err != nil {
		return fmt.Errorf("encoding query parameter %q: %w", name, err)
	}
	addForm(r.Query, name, tree, false)
	return nil
}

// QueryFormObject sets a query parameter of style form whose value is an
// object (a map, a struct or a union) as the generated server reads it:
// name=member,value,member,value or, exploded, name=member=value,member=value,
// members in order of name. A value that encodes to a scalar is
// name=value; nil or null sends nothing. Style form cannot carry a nested
// member, nor a comma in a member's name or value: those are errors.
func QueryFormObject(r *Request, name string, v any, explode bool) error {
	return setObject("query", name, v, explode, func(s string) { r.Query.Set(name, s) })
}

// HeaderObject sets a header parameter (style simple) whose value is an
// object, written as QueryFormObject writes one.
func HeaderObject(r *Request, name string, v any, explode bool) error {
	return setObject("header", name, v, explode, func(s string) { r.Header.Set(name, s) })
}

// CookieObject adds a cookie parameter (style form) whose value is an
// object, written as QueryFormObject writes one.
func CookieObject(r *Request, name string, v any, explode bool) error {
	return setObject("cookie", name, v, explode, func(s string) {
		r.Header.Add("Cookie", (&http.Cookie{Name: name, Value: s}).String())
	})
}

// setObject writes v with objectText through set, unless it sends nothing.
func setObject(in, name string, v any, explode bool, set func(string)) error {
	s, ok, err := objectText(v, explode)
	if err != nil {
		return fmt.Errorf("encoding %s parameter %q: %w", in, name, err)
	}
	if ok {
		set(s)
	}
	return nil
}

// objectText is an object-valued parameter of style form or simple as the
// generated server reads it (QueryFormObject); ok is false when v is nil
// or encodes to null or to an object without members.
func objectText(v any, explode bool) (text string, ok bool, err error) {
	tree, err := jsonTree(v)
	if err != nil {
		return "", false, err
	}
	obj, isObj := tree.(map[string]any)
	if !isObj {
		if tree == nil {
			return "", false, nil
		}
		s, ok := scalarText(tree)
		if !ok {
			return "", false, fmt.Errorf("style form cannot carry %T", v)
		}
		return s, true, nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		if obj[k] == nil {
			continue
		}
		s, ok := scalarText(obj[k])
		if !ok {
			return "", false, fmt.Errorf("style form cannot carry the nested member %q", k)
		}
		if strings.Contains(k+s, ",") {
			return "", false, fmt.Errorf("style form cannot carry the comma in member %q", k)
		}
		if explode {
			parts = append(parts, k+"="+s)
		} else {
			parts = append(parts, k, s)
		}
	}
	return strings.Join(parts, ","), len(parts) > 0, nil
}

// QueryJSON sets a query parameter declared with content
// application/json: v encoded as JSON. nil or null sends nothing.
func QueryJSON(r *Request, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding query parameter %q: %w", name, err)
	}
	if string(b) != "null" {
		r.Query.Set(name, string(b))
	}
	return nil
}

// scalarText is a scalar of a jsonTree as form encoding writes it.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// Header sets a header parameter.
func Header[T any](r *Request, name string, v T) { r.Header.Set(name, Format(v)) }

// HeaderOptional sets a header parameter when v is not nil.
func HeaderOptional[T any](r *Request, name string, v *T) {
	if v != nil {
		Header(r, name, *v)
	}
}

// HeaderList sets a list header parameter, comma-separated.
func HeaderList[T any](r *Request, name string, vs []T) {
	if len(vs) > 0 {
		r.Header.Set(name, join(vs))
	}
}

// Cookie adds a cookie parameter.
func Cookie[T any](r *Request, name string, v T) {
	r.Header.Add("Cookie", (&http.Cookie{Name: name, Value: Format(v)}).String())
}

// CookieOptional adds a cookie parameter when v is not nil.
func CookieOptional[T any](r *Request, name string, v *T) {
	if v != nil {
		Cookie(r, name, *v)
	}
}

// CookieList adds a list cookie parameter, comma-separated.
func CookieList[T any](r *Request, name string, vs []T) {
	if len(vs) > 0 {
		r.Header.Add("Cookie", (&http.Cookie{Name: name, Value: join(vs)}).String())
	}
}

func join[T any](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = Format(v)
	}
	return strings.Join(parts, ",")
}

// JSON sets the body to v encoded as JSON, with media type mediaType. The
// bytes are encoded once and sent unchanged on every attempt.
func (r *Request) JSON(mediaType string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the request body: %w", err)
	}
	r.Body, r.ContentType = b, mediaType
	return nil
}

// Raw sets the body to b as it is, with media type mediaType. A nil b sends
// no body.
func (r *Request) Raw(mediaType string, b []byte) {
	r.Body, r.ContentType = b, mediaType
}

// Encode sets the body to v in a media type that is not JSON: a []byte or
// string as it is, an io.Reader read whole (every attempt sends the same
// bytes), and for application/x-www-form-urlencoded any other value as a
// form in bracket notation (see Form), for multipart/form-data a struct
// with its files and its members named in jsonParts as JSON parts (see
// Multipart). A nil v sends no body.
func (r *Request) Encode(mediaType string, v any, jsonParts ...string) error {
	return r.EncodeParts(mediaType, v, Parts{JSON: jsonParts})
}

// EncodeParts is Encode with the way each member of a multipart/form-data
// body is sent (see Parts); other media types ignore parts.
func (r *Request) EncodeParts(mediaType string, v any, parts Parts) error {
	switch b := v.(type) {
	case nil:
		return nil
	case []byte:
		r.Raw(mediaType, b)
		return nil
	case string:
		r.Raw(mediaType, []byte(b))
		return nil
	case io.Reader:
		data, err := io.ReadAll(b)
		if err != nil {
			return fmt.Errorf("reading the request body: %w", err)
		}
		r.Raw(mediaType, data)
		return nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil
	}
	switch jsonkit.MediaType(mediaType) {
	case "application/x-www-form-urlencoded":
		return r.Form(mediaType, v)
	case "multipart/form-data":
		return r.multipart(mediaType, v, parts)
	}
	if jsonkit.IsJSON(mediaType) {
		return r.JSON(mediaType, v)
	}
	return fmt.Errorf("encoding the request body: no encoding of %T as %s", v, mediaType)
}

// Form sets the body to v, encoded as JSON would encode it and then written
// as application/x-www-form-urlencoded in bracket notation: an object's
// members as name[member], list items as name[0], name[1], a top-level
// list of scalars as the name repeated, scalars as JSON writes them
// (strings unquoted), null members left out.
func (r *Request) Form(mediaType string, v any) error {
	tree, err := jsonTree(v)
	if err != nil {
		return fmt.Errorf("encoding the request body: %w", err)
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return fmt.Errorf("encoding the request body: a form needs an object, not %T", v)
	}
	form := url.Values{}
	for name, val := range obj {
		addForm(form, name, val, true)
	}
	r.Body, r.ContentType = []byte(form.Encode()), mediaType
	return nil
}

func addForm(form url.Values, name string, v any, top bool) {
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, y := range x {
			addForm(form, name+"["+k+"]", y, false)
		}
	case []any:
		scalars := true
		for _, y := range x {
			switch y.(type) {
			case map[string]any, []any:
				scalars = false
			}
		}
		for i, y := range x {
			if scalars && top {
				addForm(form, name, y, false)
				continue
			}
			addForm(form, name+"["+strconv.Itoa(i)+"]", y, false)
		}
	default:
		if s, ok := scalarText(x); ok {
			form.Add(name, s)
		}
	}
}

// Declared reports whether the response carries the declared media type
// (mediaType, or "" for a response declared without content): a
// problem+json answer to a status declared with another media type is an
// undeclared response, so that the contract's errors stay errors.
func (r *Response) Declared(mediaType string) bool {
	got := jsonkit.MediaType(r.Header.Get("Content-Type"))
	if mediaType == "" {
		return got != "application/problem+json" || len(r.Body) == 0
	}
	want := jsonkit.MediaType(mediaType)
	switch {
	case got == "application/problem+json" && want != got:
		return false
	case got == "" && len(r.Body) == 0:
		return true
	}
	return jsonkit.MatchRange(want, got) > 0 || jsonkit.IsJSON(want) && jsonkit.IsJSON(got)
}

// DeclaredOther is Declared for a range (4XX) or default response: a
// problem+json answer is never one, so that the contract's problems (409
// conflict, 400 malformed key, ...) stay *Error values with their
// predicates unless the spec declares their status.
func (r *Response) DeclaredOther(mediaType string) bool {
	return jsonkit.MediaType(r.Header.Get("Content-Type")) != "application/problem+json" && r.Declared(mediaType)
}

// DecodeJSON decodes the response body into v. A number in an untyped
// value (any, map[string]any) is a json.Number, as the generated server
// decodes requests: an integer past 2^53 keeps its digits.
func (r *Response) DecodeJSON(v any) error {
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	err := dec.Decode(v)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if err != nil {
		return &DecodeError{Operation: r.Operation, Status: r.Status, Body: r.Body, Err: err}
	}
	return nil
}
