// The operations' types: each request, its response interface and
// responses (shared components among them), and its response encoder.

package emit

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/idemgen/idemgen/generator/model"
)

// renderOperationTypes emits the types of the operations' requests and
// responses, and the response encoders.
func (e *typeEmitter) renderOperationTypes(f *jen.File, m *model.Model) {
	for _, s := range m.SharedResponses {
		e.renderSharedResponse(f, s)
	}
	for _, o := range m.Operations {
		e.renderOpTypes(f, o)
	}
}

// renderResponseStruct declares the struct type name of response r.
func (e *typeEmitter) renderResponseStruct(f *jen.File, name string, r *model.Response) {
	f.Type().Id(name).StructFunc(func(g *jen.Group) {
		if r.Code == 0 {
			g.Id("Status").Int().Comment("the HTTP status to send")
		}
		if r.MediaType != "" {
			g.Id("Body").Add(e.typ(r.Body))
		}
		for _, h := range r.Headers {
			when := "sent when not nil"
			switch {
			case h.Type.Kind == model.GoBuiltin && h.Type.Name == "string":
				when = "sent when not empty"
			case h.Required:
				when = "required"
			}
			g.Id(h.Field).Add(e.typ(h.Type)).Comment("header " + h.Name + ", " + when)
		}
	})
}

// renderSharedResponse declares the struct of a response component that
// several operations answer with; each names it by an alias and declares
// its own response interface's marker method on it (renderOpTypes).
func (e *typeEmitter) renderSharedResponse(f *jen.File, s *model.SharedResponse) {
	doc := fmt.Sprintf("%s is the response %s, which %d operations answer with, each under a name of its own (an alias).", s.TypeName, s.Location, s.Uses)
	if s.Description != "" {
		doc += " " + s.Description
	}
	f.Comment(doc)
	e.renderResponseStruct(f, s.TypeName, s.Response)
}

func (e *typeEmitter) renderOpTypes(f *jen.File, o *model.Operation) {
	desc := fmt.Sprintf("operation %s (%s %s)", o.ID, o.Method, o.Path)
	f.Comment(fmt.Sprintf("%s is the decoded request of %s.", o.RequestType(), desc))
	if o.Summary != "" {
		f.Comment(o.Summary)
	}
	f.Type().Id(o.RequestType()).StructFunc(func(g *jen.Group) {
		for _, p := range o.Params {
			c := p.Where()
			if p.EngineKey {
				c += ": the key the engine parsed (idem.KeyFromContext)"
			}
			g.Id(p.Field).Add(e.typ(p.FieldType())).Comment(c)
		}
		if o.Body != nil {
			g.Id("Body").Add(e.typ(o.Body.Type)).Comment(o.Body.MediaType)
		}
	})
	f.Comment(fmt.Sprintf("%s is one of the responses of %s:", o.ResponseType(), desc))
	for _, r := range o.Responses {
		f.Comment("  - " + r.TypeName)
	}
	if of := o.ResponsesOf; of != nil {
		// The same responses as of's: its interface, whose marker method
		// the shared types have, and its encoder.
		f.Comment(fmt.Sprintf("It is %s: %s answers with the same responses.", of.ResponseType(), of.ID))
		f.Type().Id(o.ResponseType()).Op("=").Id(of.ResponseType())
	} else {
		f.Type().Id(o.ResponseType()).Interface(
			jen.Id(o.Marker()).Params(),
		)
	}
	var cases []jen.Code
	usesR := false
	for _, r := range o.Responses {
		doc := fmt.Sprintf("%s is the %s response of %s", r.TypeName, r.Status, desc)
		if r.Description != "" {
			doc += ": " + r.Description
		} else {
			doc += "."
		}
		if r.Shared != nil {
			doc = fmt.Sprintf("%s is the %s response of %s: %s, the response %s.", r.TypeName, r.Status, desc, r.Shared.TypeName, r.Shared.Location)
			f.Comment(doc)
			f.Type().Id(r.TypeName).Op("=").Id(r.Shared.TypeName)
			if o.ResponsesOf == nil {
				f.Func().Params(jen.Id(r.Shared.TypeName)).Id(o.Marker()).Params().Block()
			}
		} else {
			f.Comment(doc)
			e.renderResponseStruct(f, r.TypeName, r)
			f.Func().Params(jen.Id(r.TypeName)).Id(o.Marker()).Params().Block()
		}
		if o.ResponsesOf != nil {
			continue // of's encoder
		}
		status := jen.Lit(r.Code)
		if r.Code == 0 {
			status = jen.Id("r").Dot("Status")
		}
		args := []jen.Code{status}
		var call string
		switch {
		case r.MediaType == "":
			call = "EmptyResponse"
		case r.JSON:
			call = "JSONResponse"
			body := jen.Id("r").Dot("Body")
			if r.Body.ReachesWriteOnly() {
				body = jen.Add(e.stripWriteOnly(body, r.Body))
			}
			args = append(args, jen.Lit(r.ContentType()), body)
		default:
			call = "RawResponse"
			args = append(args, jen.Lit(r.MediaType), jen.Id("r").Dot("Body"))
		}
		for _, h := range r.Headers {
			value := jen.Id("r").Dot(h.Field)
			if !(h.Type.Kind == model.GoBuiltin && h.Type.Name == "string") {
				value = jen.Qual(implPkg, "HeaderValue").Call(value)
			}
			args = append(args, jen.Lit(h.Name), value)
		}
		usesR = usesR || r.Code == 0 || r.MediaType != "" || len(r.Headers) > 0
		cases = append(cases, jen.Case(jen.Id(r.TypeName)).Block(
			jen.Return(jen.Qual(implPkg, call).Call(args...)),
		))
	}
	if o.ResponsesOf != nil {
		return // o.ResponsesOf's encoder, declared with its types
	}
	// One encoder per operation with a case per response type, rather than
	// a method per response type: a spec with thousands of responses makes
	// the compiler build a method, a pointer wrapper and a method table
	// entry for each, which was a fifth of a large package's compile time.
	cases = append(cases,
		jen.Case(jen.Nil()).Block(jen.Return(jen.Nil(), jen.Qual(implPkg, "ErrNilResponse"))),
	)
	// The switch is on any(resp), not resp: a case of a switch on an
	// interface compares method tables, and the compiler builds the case
	// type's table for the interface, listing every method of the type.
	// A response shared by many operations (an error response) has a
	// marker method per operation, so that was quadratic: format_gen's
	// types (an error response shared by 715 operations) compiled in 3.0
	// s of CPU, 1.7 s without. A switch on any compares type descriptors
	// only.
	subject := jen.Id("any").Call(jen.Id("resp")).Assert(jen.Type())
	doc := fmt.Sprintf("%s encodes a response of %s.", o.Encoder(), o.ID)
	if len(o.ResponsesFor) > 0 {
		others := "operation that answers"
		if len(o.ResponsesFor) > 1 {
			others = fmt.Sprintf("%d operations that answer", len(o.ResponsesFor))
		}
		doc = fmt.Sprintf("%s encodes a response of %s and of the other %s with the same responses: %s.",
			o.Encoder(), o.ID, others, sharerList(o.ResponsesFor))
	}
	if usesR {
		subject = jen.Id("r").Op(":=").Add(subject)
	}
	f.Comment(doc)
	f.Func().Id(o.Encoder()).Params(jen.Id("resp").Id(o.ResponseType())).Params(jen.Op("*").Qual(idemPkg, "Response"), jen.Error()).Block(
		jen.Switch(subject).Block(cases...),
		jen.Return(jen.Nil(), jen.Qual(implPkg, "UndeclaredResponse").Call(jen.Id("resp"))),
	)
}

// sharerList names the first few of the operations that have another's
// responses, and how many more there are.
func sharerList(ops []*model.Operation) string {
	const shown = 3
	var ids []string
	for i, o := range ops {
		if i == shown {
			ids = append(ids, fmt.Sprintf("and %d more", len(ops)-shown))
			break
		}
		ids = append(ids, o.ID)
	}
	return strings.Join(ids, ", ")
}
