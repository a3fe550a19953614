package generator

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

const (
	idemPkg = "github.com/idemgen/idemgen/runtime/idem"
	implPkg = "github.com/idemgen/idemgen/runtime/idemimpl"
	uuidPkg = "github.com/google/uuid"
)

func jenType(t GoType) jen.Code {
	switch t.Kind {
	case GoBuiltin, GoNamed:
		return jen.Id(t.Name)
	case GoTime:
		return jen.Qual("time", "Time")
	case GoUUID:
		return jen.Qual(uuidPkg, "UUID")
	case GoBytes:
		return jen.Index().Byte()
	case GoSlice:
		return jen.Index().Add(jenType(*t.Elem))
	case GoMap:
		return jen.Map(jen.String()).Add(jenType(*t.Elem))
	case GoPointer:
		return jen.Op("*").Add(jenType(*t.Elem))
	}
	return jen.Any()
}

// renderTypes emits the schema types, request and response types with
// jennifer, which records imports as identifiers are used.
func renderTypes(m *Model) *jen.File {
	f := jen.NewFile(m.Package)
	f.ImportName(idemPkg, "idem")
	f.ImportName(implPkg, "idemimpl")
	f.ImportName(uuidPkg, "uuid")
	for _, t := range m.Types {
		renderType(f, t)
	}
	for _, o := range m.Operations {
		renderOpTypes(f, o)
	}
	if len(m.Operations) > 0 {
		f.Comment("unimplementedResponse is what Unimplemented returns: 501 problem+json.")
		f.Type().Id("unimplementedResponse").Struct()
		f.Func().Params(jen.Id("unimplementedResponse")).Id("toResponse").Params().Params(jen.Op("*").Qual(idemPkg, "Response"), jen.Error()).Block(
			jen.Return(jen.Qual(implPkg, "NotImplementedResponse").Call(), jen.Nil()),
		)
		for _, o := range m.Operations {
			f.Func().Params(jen.Id("unimplementedResponse")).Id(o.Marker()).Params().Block()
		}
	}
	return f
}

func renderType(f *jen.File, t *Type) {
	doc := t.Doc
	if doc == "" {
		doc = "is generated from " + t.Location + "."
	} else {
		doc = "is " + lowerFirst(doc) + " (" + t.Location + ")."
	}
	f.Comment(t.Name + " " + doc)
	switch t.Kind {
	case KindAlias:
		f.Type().Id(t.Name).Op("=").Add(jenType(t.Alias))
	case KindEnum:
		f.Type().Id(t.Name).String()
		f.Comment(t.Name + " values.")
		f.Const().DefsFunc(func(g *jen.Group) {
			for _, v := range t.Enum {
				g.Id(v.Name).Id(t.Name).Op("=").Lit(v.Value)
			}
		})
		f.Comment("Valid reports whether v is one of the declared " + t.Name + " values.")
		f.Func().Params(jen.Id("v").Id(t.Name)).Id("Valid").Params().Bool().Block(
			jen.Switch(jen.Id("v")).Block(
				jen.CaseFunc(func(g *jen.Group) {
					for _, v := range t.Enum {
						g.Id(v.Name)
					}
				}).Block(jen.Return(jen.True())),
			),
			jen.Return(jen.False()),
		)
		f.Comment("UnmarshalJSON refuses values that are not declared.")
		f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().Block(
			jen.Return(jen.Qual(implPkg, "UnmarshalEnum").Call(jen.Id("b"), jen.Id("v"))),
		)
	case KindUnion:
		f.Type().Id(t.Name).Struct(jen.Id("raw").Qual("encoding/json", "RawMessage"))
		f.Comment("Raw returns the JSON value as received.")
		f.Func().Params(jen.Id("u").Id(t.Name)).Id("Raw").Params().Qual("encoding/json", "RawMessage").Block(jen.Return(jen.Id("u").Dot("raw")))
		f.Comment("MarshalJSON implements json.Marshaler.")
		f.Func().Params(jen.Id("u").Id(t.Name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
			jen.Return(jen.Qual(implPkg, "RawOrNull").Call(jen.Id("u").Dot("raw")), jen.Nil()))
		f.Comment("UnmarshalJSON implements json.Unmarshaler.")
		f.Func().Params(jen.Id("u").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().Block(
			jen.Id("u").Dot("raw").Op("=").Append(jen.Id("u").Dot("raw").Index(jen.Op(":").Lit(0)), jen.Id("b").Op("...")),
			jen.Return(jen.Nil()))
		for _, v := range t.Variants {
			f.Comment(fmt.Sprintf("As%s decodes the value as %s.", v.Name, v.Type))
			f.Func().Params(jen.Id("u").Id(t.Name)).Id("As"+v.Name).Params().Params(jen.Id("v").Add(jenType(v.Type)), jen.Err().Error()).Block(
				jen.Err().Op("=").Qual("encoding/json", "Unmarshal").Call(jen.Id("u").Dot("raw"), jen.Op("&").Id("v")),
				jen.Return())
			f.Comment(fmt.Sprintf("%sFrom%s encodes v as a %s.", t.Name, v.Name, t.Name))
			f.Func().Id(t.Name+"From"+v.Name).Params(jen.Id("v").Add(jenType(v.Type))).Params(jen.Id(t.Name), jen.Error()).Block(
				jen.List(jen.Id("b"), jen.Err()).Op(":=").Qual("encoding/json", "Marshal").Call(jen.Id("v")),
				jen.Return(jen.Id(t.Name).Values(jen.Id("raw").Op(":").Id("b")), jen.Err()))
		}
	case KindStruct:
		f.Type().Id(t.Name).StructFunc(func(g *jen.Group) {
			for _, fl := range t.Fields {
				tag := fl.JSONName
				if !fl.Required {
					tag += ",omitempty"
				}
				c := g.Id(fl.Name).Add(jenType(fl.Type)).Tag(map[string]string{"json": tag})
				if fl.Doc != "" {
					c.Comment(fl.Doc)
				}
			}
		})
		if req := t.Required(); len(req) > 0 {
			f.Comment("UnmarshalJSON refuses a value that lacks a required property.")
			args := []jen.Code{jen.Id("b")}
			for _, r := range req {
				args = append(args, jen.Lit(r))
			}
			f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().Block(
				jen.Type().Id("plain").Id(t.Name),
				jen.If(jen.Err().Op(":=").Qual("encoding/json", "Unmarshal").Call(jen.Id("b"), jen.Parens(jen.Op("*").Id("plain")).Call(jen.Id("v"))), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
				jen.Return(jen.Qual(implPkg, "CheckRequired").Call(args...)),
			)
		}
	}
}

func renderOpTypes(f *jen.File, o *Operation) {
	desc := fmt.Sprintf("operation %s (%s %s)", o.ID, o.Method, o.Path)
	f.Comment(fmt.Sprintf("%s is the decoded request of %s.", o.RequestType(), desc))
	if o.Summary != "" {
		f.Comment(o.Summary)
	}
	f.Type().Id(o.RequestType()).StructFunc(func(g *jen.Group) {
		for _, p := range o.Params {
			t, elem := p.Type, p.Type
			switch {
			case p.List:
				t = GoType{Kind: GoSlice, Elem: &elem}
			case !p.Required && !t.nilable():
				t = ptr(t)
			}
			g.Id(p.Field).Add(jenType(t)).Comment(p.Where())
		}
		if o.Body != nil {
			g.Id("Body").Add(jenType(o.Body.Type)).Comment(o.Body.MediaType)
		}
	})
	f.Comment(fmt.Sprintf("%s is one of the responses of %s:", o.ResponseType(), desc))
	for _, r := range o.Responses {
		f.Comment("  - " + r.TypeName)
	}
	f.Type().Id(o.ResponseType()).Interface(
		jen.Id(o.Marker()).Params(),
		jen.Id("toResponse").Params().Params(jen.Op("*").Qual(idemPkg, "Response"), jen.Error()),
	)
	for _, r := range o.Responses {
		doc := fmt.Sprintf("%s is the %s response of %s", r.TypeName, r.Status, desc)
		if r.Description != "" {
			doc += ": " + r.Description
		} else {
			doc += "."
		}
		f.Comment(doc)
		f.Type().Id(r.TypeName).StructFunc(func(g *jen.Group) {
			if r.Code == 0 {
				g.Id("Status").Int().Comment("the HTTP status to send")
			}
			if r.MediaType != "" {
				g.Id("Body").Add(jenType(r.Body))
			}
			for _, h := range r.Headers {
				g.Id(h.Field).String().Comment("header " + h.Name + ", sent when not empty")
			}
		})
		f.Func().Params(jen.Id(r.TypeName)).Id(o.Marker()).Params().Block()
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
			args = append(args, jen.Lit(r.MediaType), jen.Id("r").Dot("Body"))
		default:
			call = "RawResponse"
			args = append(args, jen.Lit(r.MediaType), jen.Id("r").Dot("Body"))
		}
		for _, h := range r.Headers {
			args = append(args, jen.Lit(h.Name), jen.Id("r").Dot(h.Field))
		}
		f.Func().Params(jen.Id("r").Id(r.TypeName)).Id("toResponse").Params().Params(jen.Op("*").Qual(idemPkg, "Response"), jen.Error()).Block(
			jen.Return(jen.Qual(implPkg, call).Call(args...)),
		)
	}
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	if len(r) > 1 && r[1] >= 'A' && r[1] <= 'Z' {
		return s
	}
	return string(append([]rune{toLower(r[0])}, r[1:]...))
}

func toLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}
