package idemclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"reflect"
	"sort"
	"strings"

	"github.com/idemgen/idemgen/internal/jsonkit"
)

// FilePart is a file of a multipart/form-data request body: the generated
// types' file members (idem.File) implement it.
type FilePart interface {
	MultipartFile() (filename string, header textproto.MIMEHeader, content io.Reader)
}

// Multipart sets the body to v, a struct, as multipart/form-data: each
// member implementing FilePart becomes a file part, each item of a list of
// them one under the member's name (its content read whole
// now, so that every attempt sends the same bytes), a member named in
// jsonParts a part of JSON (application/json; a list one part per item),
// the other members parts in bracket notation as Form writes them, in name
// order.
func (r *Request) Multipart(mediaType string, v any, jsonParts ...string) error {
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
	type jsonPart struct {
		name string
		val  []byte
	}
	var jsons []jsonPart
	for _, name := range jsonParts {
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
			jsons = append(jsons, jsonPart{name, b})
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
			if err := mw.WriteField(k, val); err != nil {
				return err
			}
		}
	}
	for _, j := range jsons {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, j.name))
		h.Set("Content-Type", "application/json")
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
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, f.name, filename))
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
