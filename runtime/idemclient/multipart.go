package idemclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"reflect"
	"sort"
	"strings"

	"github.com/idemgen/idemgen/internal/jsonkit"
)

// FilePart is a file of a multipart/form-data request body: the generated
// types' file members (idemtype.File) implement it.
type FilePart interface {
	MultipartFile() (filename string, header textproto.MIMEHeader, content io.Reader)
}

// Parts says how members of a multipart/form-data body that are not files
// are sent, as the operation's encoding declares them: a member named in
// JSON as a part of JSON (application/json; a list one part per item), a
// member named in Form as one part holding a form of its members
// (application/x-www-form-urlencoded, in bracket notation: title=Guide&pages=2),
// the others as parts in bracket notation, as Form writes them.
type Parts struct {
	JSON []string
	Form []string
}

// Multipart sets the body to v, a struct, as multipart/form-data: each
// member implementing FilePart becomes a file part, each item of a list of
// them one under the member's name (its content read whole
// now, so that every attempt sends the same bytes), a member named in
// jsonParts a part of JSON (application/json; a list one part per item),
// the other members parts in bracket notation as Form writes them, in name
// order. A member whose name a json tag cannot carry (generated code tags
// it json:"-" and idem:"name") is sent under that name.
func (r *Request) Multipart(mediaType string, v any, jsonParts ...string) error {
	return r.multipart(mediaType, v, Parts{JSON: jsonParts})
}

func (r *Request) multipart(mediaType string, v any, parts Parts) error {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return fmt.Errorf("encoding the request body: multipart/form-data needs a struct, not %T", v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the request body: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree map[string]any
	if err := dec.Decode(&tree); err != nil {
		return fmt.Errorf("encoding the request body: %w", err)
	}
	type file struct {
		name string
		part FilePart
	}
	var files []file
	for i := 0; i < rv.NumField(); i++ {
		sf := rv.Type().Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			name = sf.Tag.Get("idem")
		}
		if !sf.IsExported() || name == "-" || name == "" {
			continue
		}
		fv := rv.Field(i)
		if fv.Kind() == reflect.Pointer && fv.IsNil() {
			continue
		}
		if fp, ok := fv.Interface().(FilePart); ok {
			delete(tree, name)
			if !fv.IsZero() {
				files = append(files, file{name, fp})
			}
		} else if fv.Kind() == reflect.Slice && fv.Type().Elem().Implements(reflect.TypeFor[FilePart]()) {
			// A list of files: one part each, under the member's name.
			delete(tree, name)
			for j := 0; j < fv.Len(); j++ {
				files = append(files, file{name, fv.Index(j).Interface().(FilePart)})
			}
		}
	}
	type valuePart struct {
		name, contentType string
		val               []byte
	}
	var values []valuePart
	for _, name := range parts.Form {
		obj, ok := tree[name].(map[string]any)
		if !ok {
			continue // absent, or not an object: bracket parts
		}
		delete(tree, name)
		form := url.Values{}
		for member, val := range obj {
			addForm(form, member, val, true)
		}
		values = append(values, valuePart{name, "application/x-www-form-urlencoded", []byte(form.Encode())})
	}
	for _, name := range parts.JSON {
		val, ok := tree[name]
		if !ok || val == nil {
			continue
		}
		delete(tree, name)
		items := []any{val}
		if list, ok := val.([]any); ok {
			items = list
		}
		for _, it := range items {
			b, err := json.Marshal(it)
			if err != nil {
				return fmt.Errorf("encoding part %q of the request body: %w", name, err)
			}
			values = append(values, valuePart{name, "application/json", b})
		}
	}
	form := url.Values{}
	for name, val := range tree {
		addForm(form, name, val, true)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, val := range form[k] {
			h := textproto.MIMEHeader{"Content-Disposition": {disposition(k, "", false)}}
			w, err := mw.CreatePart(h)
			if err == nil {
				_, err = io.WriteString(w, val)
			}
			if err != nil {
				return err
			}
		}
	}
	for _, j := range values {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", disposition(j.name, "", false))
		h.Set("Content-Type", j.contentType)
		w, err := mw.CreatePart(h)
		if err == nil {
			_, err = w.Write(j.val)
		}
		if err != nil {
			return err
		}
	}
	for _, f := range files {
		filename, header, content := f.part.MultipartFile()
		h := textproto.MIMEHeader{}
		for k, vs := range header {
			h[k] = append([]string(nil), vs...)
		}
		h.Set("Content-Disposition", disposition(f.name, filename, true))
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/octet-stream")
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		if content != nil {
			if _, err := io.Copy(w, content); err != nil {
				return fmt.Errorf("reading file %q of the request body: %w", f.name, err)
			}
		}
	}
	if err := mw.Close(); err != nil {
		return err
	}
	ct := mw.FormDataContentType()
	if mt := jsonkit.MediaType(mediaType); mt != "multipart/form-data" {
		ct = mediaType
	}
	r.Body, r.ContentType = buf.Bytes(), ct
	return nil
}

// disposition is the Content-Disposition of a part named name (with
// filename for a file part). Names and file names are quoted strings as
// mime/multipart writes them (a backslash before `"` and `\`, other
// characters as they are, UTF-8 included, as RFC 7578 asks); one holding a
// control character, which a header cannot carry as it is, is written in
// RFC 2231's encoded form (name*=utf-8 and the name percent-encoded) by
// mime.FormatMediaType, which mime/multipart's reader decodes
// (Part.FormName, as the generated server reads names).
func disposition(name, filename string, file bool) string {
	if hasControl(name) || hasControl(filename) {
		params := map[string]string{"name": name}
		if file {
			params["filename"] = filename
		}
		return mime.FormatMediaType("form-data", params)
	}
	s := `form-data; name="` + quoteEscaper.Replace(name) + `"`
	if file {
		s += `; filename="` + quoteEscaper.Replace(filename) + `"`
	}
	return s
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}
