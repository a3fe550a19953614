// The model's responses: a response type per declared status of an
// operation, and the one struct of a response component several
// operations answer with.

package model

import (
	"fmt"
	"strings"
)

// Response is one declared status of an operation.
type Response struct {
	Status      string // "201", "2XX", "default"
	Code        int    // 0 for ranges and default: the type then has a Status field
	TypeName    string
	Description string
	MediaType   string // "" when there is no body
	JSON        bool
	Body        GoType
	Headers     []*Header
	// Shared is the type of the response component this response names
	// by $ref, when other operations name it too: TypeName is then an
	// alias of Shared.TypeName (type GetAlbum401Response =
	// UnauthorizedResponse), and MediaType, Body and Headers are the
	// shared type's. nil: TypeName is a struct of the operation's own.
	Shared *SharedResponse
}

// SharedResponse is the one struct type of a response component
// (#/components/responses/Unauthorized) that several operations answer
// with: each of them names it by an alias of its own, and the marker
// method of each of their response interfaces is declared on it, so a
// handler may return it (or a helper's value of it) from any operation that
// declares it, and from no other.
type SharedResponse struct {
	TypeName    string // UnauthorizedResponse
	Location    string // #/components/responses/Unauthorized
	Description string
	// Response is its first use, whose Code (0: the type has a Status
	// field), MediaType, JSON, Body and Headers every use has.
	Response *Response
	Uses     int // the operations that answer with it
}

// Header is a response header field of a response type.
type Header struct {
	Name  string // canonical header name: X-Rate-Limit
	Field string
	// Type is the Go type of the field: string (sent when not empty), or the
	// schema's scalar type, a pointer when the header is optional (sent when
	// not nil). idemimpl.HeaderValue formats it.
	Type     GoType
	Required bool
}

// Pointer reports whether the header's field is a pointer (optional, not a string).
func (h *Header) Pointer() bool { return h.Type.Kind == GoPointer }

// IsString reports whether the header's field is a string: the value as
// sent, sent when not empty.
func (h *Header) IsString() bool { return h.Type.Kind == GoBuiltin && h.Type.Name == "string" }

// shareResponses points the operations that answer with the same shared
// response components, under the same statuses and in the same order, at
// the first one's response interface and encoder. The operations of a
// spec whose responses are all components can be most of it (715 of
// format_gen's 1,072 answer with its error response alone); an encoder,
// an interface and a marker method on the component each, for each of
// them, were a fifth of its compile.
func shareResponses(ops []*Operation) {
	first := map[string]*Operation{}
	for _, o := range ops {
		key, ok := responsesKey(o)
		if !ok {
			continue
		}
		f := first[key]
		if f == nil {
			first[key] = o
			continue
		}
		o.ResponsesOf, o.Names.Encoder, o.Names.Marker = f, f.Names.Encoder, f.Names.Marker
		f.ResponsesFor = append(f.ResponsesFor, o)
	}
}

// responsesKey is what decides an operation's response interface and
// encoder, when every response of it is a shared type: each one's type
// and status. The type carries its media type, body and headers, and
// whether it has a Status field.
func responsesKey(o *Operation) (string, bool) {
	var k strings.Builder
	for _, r := range o.Responses {
		if r.Shared == nil {
			return "", false
		}
		fmt.Fprintf(&k, "%s %d\n", r.Shared.TypeName, r.Code)
	}
	return k.String(), true
}
