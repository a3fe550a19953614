package generator

import (
	"mime"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// jsonParts lists the top-level properties of a multipart/form-data body
// whose parts hold JSON, as OpenAPI says a part's content type is chosen:
// the encoding's contentType when it names one (JSON when any of its
// comma-separated types is application/json or +json); otherwise an
// encoding with style or explode sends the property in bracket notation,
// as a form; otherwise the default of the property's type: JSON for an
// object, for an array that of its items, text for the rest (and
// application/octet-stream for binary, a file part).
func jsonParts(media *openapi3.MediaType) []string {
	if media == nil || media.Schema == nil || media.Schema.Value == nil {
		return nil
	}
	var out []string
	for _, name := range sortedKeys(media.Schema.Value.Properties) {
		if e := media.Encoding[name]; e != nil {
			if e.ContentType != "" {
				if contentTypeJSON(e.ContentType) {
					out = append(out, name)
				}
				continue
			}
			if e.Style != "" || e.Explode != nil {
				continue
			}
		}
		if defaultJSONPart(media.Schema.Value.Properties[name]) {
			out = append(out, name)
		}
	}
	return out
}

func contentTypeJSON(list string) bool {
	for _, ct := range strings.Split(list, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(ct))
		if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return true
		}
	}
	return false
}

// defaultJSONPart reports whether a property's parts are JSON when its
// encoding does not say: an object, or an array of objects.
func defaultJSONPart(sr *openapi3.SchemaRef) bool {
	if sr == nil || sr.Value == nil {
		return false
	}
	s := sr.Value
	types, _ := typesOf(s)
	has := func(t string) bool {
		for _, x := range types {
			if x == t {
				return true
			}
		}
		return false
	}
	switch {
	case has(openapi3.TypeObject) || len(types) == 0 && len(s.Properties) > 0:
		return true
	case has(openapi3.TypeArray):
		return defaultJSONPart(s.Items)
	}
	return false
}

// ClientJSONParts is what the generated client passes to idemclient's
// Encode after the body: the JSON parts of the body's multipart media
// type, as further arguments (", \"details\""), or "".
func (bd *Body) ClientJSONParts() string {
	if len(bd.Media) == 0 || bd.Media[0].Decode != "AsMultipart" || bd.MediaType != bd.Media[0].Type && !strings.EqualFold(bd.MediaType, bd.Media[0].Type) {
		return ""
	}
	var s string
	for _, n := range bd.Media[0].JSONParts {
		s += ", " + strconv.Quote(n)
	}
	return s
}
