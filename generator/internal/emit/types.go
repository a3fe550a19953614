package emit

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/idemgen/idemgen/generator/model"
)

// typeEmitter renders types into one file: types.gen.go, or, when the
// types are split (Model.Split), the file of one of their packages.
type typeEmitter struct {
	// schemaPkg is the import path named types are qualified with: the
	// schema types' package while the operations' types of a split
	// package are rendered; "" where the named types are declared in the
	// same package.
	schemaPkg string
	// strip is the name of the method that drops writeOnly members:
	// exported when the types are split, for the encoders in the
	// operations' package call it.
	strip string
}

// typ is the Go type t as the file spells it.
func (e *typeEmitter) typ(t model.GoType) jen.Code { return spellType(t, jenTypes{e.schemaPkg}) }

// renderTypes emits the schema types, request and response types with
// jennifer, which records imports as identifiers are used: one file,
// types.gen.go, or, when the model is split, that file with an alias of
// each type, the files of the two packages that declare them and the
// unimplemented package's, by path below the package.
func renderTypes(m *model.Model) map[string]*jen.File {
	newFile := func(pkg string) *jen.File {
		f := jen.NewFile(pkg)
		f.ImportName(idemPkg, "idem")
		f.ImportName(typePkg, "idemtype")
		f.ImportName(implPkg, "idemimpl")
		f.ImportName(uuidPkg, "uuid")
		return f
	}
	if m.Split == nil {
		f := newFile(m.Package)
		e := &typeEmitter{strip: "withoutWriteOnly"}
		for _, t := range m.Types {
			e.renderType(f, t)
		}
		e.renderOperationTypes(f, m)
		return map[string]*jen.File{"types.gen.go": f}
	}
	schema, ops := newFile(path.Base(model.SchemaTypesDir)), newFile(path.Base(model.OpTypesDir))
	ops.ImportName(m.Split.SchemaTypes, path.Base(model.SchemaTypesDir))
	se := &typeEmitter{strip: "WithoutWriteOnly"}
	for _, t := range m.Types {
		se.renderType(schema, t)
	}
	(&typeEmitter{schemaPkg: m.Split.SchemaTypes, strip: se.strip}).renderOperationTypes(ops, m)
	return map[string]*jen.File{
		"types.gen.go": renderAliases(m), model.SchemaTypesDir +
			"/types.gen.go": schema, model.OpTypesDir +
			"/types.gen.go": ops, model.UnimplementedDir +
			"/unimplemented.gen.go": renderUnimplemented(m),
	}
}

func (e *typeEmitter) renderType(f *jen.File, t *model.Type) {
	doc := t.Doc
	switch {
	case t.Kind == model.KindUnion:
		var names []string
		for _, v := range t.Variants {
			names = append(names, v.Name)
		}
		doc = "is one of " + strings.Join(names, ", ") + " (" + t.Location + sharedWith(t) + "): set exactly one field."
		if t.Doc != "" {
			doc += " " + t.Doc
		}
	case doc == "":
		doc = "is generated from " + t.Location + sharedWith(t) + "."
	default:
		doc = "is " + lowerFirst(doc) + " (" + t.Location + sharedWith(t) + ")."
	}
	f.Comment(t.Name + " " + doc)
	switch t.Kind {
	case model.KindAlias:
		f.Type().Id(t.Name).Op("=").Add(e.typ(t.Alias))
	case model.KindEnum:
		f.Type().Id(t.Name).String()
		f.Comment(t.Name + " values.")
		f.Const().DefsFunc(func(g *jen.Group) {
			for _, v := range t.Enum {
				g.Id(v.Name).Id(t.Name).Op("=").Lit(v.Value)
			}
		})
		// Valid lists the constants once; UnmarshalJSON goes through it.
		// Both methods stay as short as they can: Stripe has 1 636 enums.
		var values []jen.Code
		for _, v := range t.Enum {
			values = append(values, jen.Id(v.Name))
		}
		f.Comment("Valid reports whether v is one of the declared " + t.Name + " values; UnmarshalJSON refuses the others.")
		f.Func().Params(jen.Id("v").Id(t.Name)).Id("Valid").Params().Bool().Block(
			jen.Return(jen.Qual(implPkg, "OneOf").Call(append([]jen.Code{jen.Id("v")}, values...)...)),
		).Line().Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().Block(
			jen.Return(jen.Qual(implPkg, "UnmarshalEnum").Call(jen.Id("b"), jen.Id("v"))),
		)
	case model.KindUnion:
		e.renderUnion(f, t)
	case model.KindStruct:
		e.renderStruct(f, t)
	}
	if t.WriteOnly && t.Kind != model.KindAlias {
		e.renderWithoutWriteOnly(f, t)
	}
}

// sharedWith says how many other inline schemas a shared type stands for.
func sharedWith(t *model.Type) string {
	switch t.Shared {
	case 0:
		return ""
	case 1:
		return " and 1 other inline schema of the same shape"
	}
	return fmt.Sprintf(" and %d other inline schemas of the same shape", t.Shared)
}

// renderStruct emits a struct, and JSON methods when it has required
// members, keeps additional properties, or has members whose names a json
// tag cannot carry (Field.TagName).
func (e *typeEmitter) renderStruct(f *jen.File, t *model.Type) {
	var named []*model.Field
	f.Type().Id(t.Name).StructFunc(func(g *jen.Group) {
		for _, fl := range t.Fields {
			tag := fl.JSONName
			if !fl.Required || fl.WriteOnly {
				tag += ",omitzero"
			}
			doc := fl.Doc
			if !fl.TagName() {
				named = append(named, fl)
				tag = "-"
				doc = strings.TrimSpace(fmt.Sprintf("member %s (MarshalJSON and UnmarshalJSON carry it: a json tag cannot name it). %s", strconv.Quote(fl.JSONName), doc))
			}
			tags := map[string]string{"json": tag}
			if tag == "-" {
				// The member's name, for what reads the struct by its
				// tags (idemclient's multipart encoder).
				tags["idem"] = fl.JSONName
			}
			c := g.Id(fl.Name).Add(e.typ(fl.Type)).Tag(tags)
			if doc != "" {
				c.Comment(doc)
			}
		}
		if ap := t.AdditionalProperties; ap != nil {
			g.Id(ap.Name).Add(e.typ(ap.Type)).Tag(map[string]string{"json": "-"}).Comment(ap.Doc)
		}
	})
	req := t.Required()
	ap := t.AdditionalProperties
	if len(req) == 0 && ap == nil && len(named) == 0 {
		return
	}
	var declared []jen.Code
	for _, fl := range t.Fields {
		declared = append(declared, jen.Lit(fl.JSONName))
	}
	namedList := func(value func(fl *model.Field) jen.Code) []jen.Code {
		var out []jen.Code
		for _, fl := range named {
			d := jen.Dict{jen.Id("Name"): jen.Lit(fl.JSONName), jen.Id("Value"): value(fl)}
			if !fl.Required || fl.WriteOnly {
				d[jen.Id("OmitZero")] = jen.True()
			}
			out = append(out, jen.Qual(implPkg, "Named").Values(d))
		}
		return out
	}
	if ap != nil || len(named) > 0 {
		var enc *jen.Statement
		var what []string
		if ap != nil {
			enc = jen.Qual(implPkg, "MarshalAdditional").Call(append([]jen.Code{jen.Id("plain").Call(jen.Id("v")), jen.Id("v").Dot(ap.Name)}, declared...)...)
			what = append(what, "with the members of "+ap.Name+" beside the declared ones")
		} else {
			enc = jen.Qual("encoding/json", "Marshal").Call(jen.Id("plain").Call(jen.Id("v")))
		}
		body := []jen.Code{jen.Type().Id("plain").Id(t.Name)}
		if len(named) > 0 {
			what = append(what, "with the members whose names a json tag cannot carry")
			body = append(body,
				jen.List(jen.Id("b"), jen.Err()).Op(":=").Add(enc),
				jen.Return(jen.Qual(implPkg, "AppendNamed").Call(append([]jen.Code{jen.Id("b"), jen.Err()}, namedList(func(fl *model.Field) jen.Code { return jen.Id("v").Dot(fl.Name) })...)...)))
		} else {
			body = append(body, jen.Return(enc))
		}
		f.Comment("MarshalJSON encodes v " + strings.Join(what, " and ") + ".")
		f.Func().Params(jen.Id("v").Id(t.Name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(body...)
	}
	var what []string
	if len(req) > 0 {
		what = append(what, "refuses a value that lacks a required property")
	}
	if ap != nil {
		what = append(what, "keeps undeclared members in "+ap.Name)
	}
	if len(named) > 0 {
		what = append(what, "decodes the members whose names a json tag cannot carry")
	}
	f.Comment("UnmarshalJSON " + strings.Join(what, " and ") + ".")
	if ap == nil && len(named) == 0 {
		args := []jen.Code{jen.Id("b"), jen.Parens(jen.Op("*").Id("plain")).Call(jen.Id("v"))}
		for _, r := range req {
			args = append(args, jen.Lit(r))
		}
		f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().Block(
			jen.Type().Id("plain").Id(t.Name),
			jen.Return(jen.Qual(implPkg, "UnmarshalRequired").Call(args...)),
		)
		return
	}
	body := []jen.Code{
		jen.Type().Id("plain").Id(t.Name),
		jen.If(jen.Err().Op(":=").Qual(implPkg, "Unmarshal").Call(jen.Id("b"), jen.Parens(jen.Op("*").Id("plain")).Call(jen.Id("v"))), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
	}
	if len(req) > 0 {
		args := []jen.Code{jen.Id("b")}
		for _, r := range req {
			args = append(args, jen.Lit(r))
		}
		body = append(body, jen.If(jen.Err().Op(":=").Qual(implPkg, "CheckRequired").Call(args...), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())))
	}
	if len(named) > 0 {
		call := jen.Qual(implPkg, "UnmarshalNamed").Call(append([]jen.Code{jen.Id("b")}, namedList(func(fl *model.Field) jen.Code { return jen.Op("&").Id("v").Dot(fl.Name) })...)...)
		if ap == nil {
			body = append(body, jen.Return(call))
		} else {
			body = append(body, jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())))
		}
	}
	if ap != nil {
		body = append(body, jen.Return(jen.Qual(implPkg, "UnmarshalAdditional").Call(append([]jen.Code{jen.Id("b"), jen.Op("&").Id("v").Dot(ap.Name)}, declared...)...)))
	}
	f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().Block(body...)
}

// renderUnion emits a union: a struct with a pointer field per member, a
// MarshalJSON that encodes the one set, and an UnmarshalJSON that dispatches
// on the discriminator or tries the members in order.
func (e *typeEmitter) renderUnion(f *jen.File, t *model.Type) {
	f.Type().Id(t.Name).StructFunc(func(g *jen.Group) {
		for _, v := range t.Variants {
			g.Id(v.Name).Op("*").Add(e.typ(v.Type))
		}
	})
	f.Comment("MarshalJSON encodes the member that is set; null when none is.")
	f.Func().Params(jen.Id("u").Id(t.Name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Switch().BlockFunc(func(g *jen.Group) {
			for _, v := range t.Variants {
				g.Case(jen.Id("u").Dot(v.Name).Op("!=").Nil()).Return(jen.Qual("encoding/json", "Marshal").Call(jen.Id("u").Dot(v.Name)))
			}
		}),
		jen.Return(jen.Index().Byte().Call(jen.Lit("null")), jen.Nil()),
	)
	var names []jen.Code
	for _, v := range t.Variants {
		names = append(names, jen.Lit(v.Name))
	}
	// try decodes into each member whose JSON types hold the value's
	// (objects too, unless objects is false), in order.
	try := func(g *jen.Group, objects bool) {
		for _, v := range t.Variants {
			var kinds []jen.Code
			for _, k := range v.JSON {
				if k != "object" || objects {
					kinds = append(kinds, jen.Id("kind").Op("==").Lit(k))
				}
			}
			if v.JSON != nil && len(kinds) == 0 {
				continue
			}
			cond := jen.Qual(implPkg, "DecodeVariant").Call(jen.Id("b"), jen.Op("&").Id("u").Dot(v.Name)).Op("==").Nil()
			if v.JSON != nil {
				cond = orAll(kinds).Op("&&").Add(cond)
			}
			g.If(cond).Block(jen.Return(jen.Nil()))
		}
	}
	if t.Discriminator == "" {
		f.Comment("UnmarshalJSON decodes the first member, in the order of the spec, that accepts the value's JSON type and decodes without error.")
		f.Func().Params(jen.Id("u").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().BlockFunc(func(g *jen.Group) {
			g.Op("*").Id("u").Op("=").Id(t.Name).Values()
			g.Id("kind").Op(":=").Qual(implPkg, "JSONKind").Call(jen.Id("b"))
			g.If(jen.Id("kind").Op("==").Lit("null")).Block(jen.Return(jen.Nil()))
			try(g, true)
			g.Return(jen.Qual(implPkg, "NoVariant").Call(append([]jen.Code{jen.Id("b")}, names...)...))
		})
		return
	}
	f.Comment(fmt.Sprintf("UnmarshalJSON decodes the member the %q property names; other values, and values that are not objects, are refused.", t.Discriminator))
	f.Func().Params(jen.Id("u").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().BlockFunc(func(g *jen.Group) {
		g.Op("*").Id("u").Op("=").Id(t.Name).Values()
		nonObject := slices.ContainsFunc(t.Variants, func(v *model.Variant) bool {
			return v.JSON != nil && slices.ContainsFunc(v.JSON, func(k string) bool { return k != "object" })
		})
		if nonObject {
			// A member that is not an object (GitHub's directory listing is
			// an array) cannot carry the property: it is chosen by JSON type.
			g.If(jen.Id("kind").Op(":=").Qual(implPkg, "JSONKind").Call(jen.Id("b")), jen.Id("kind").Op("!=").Lit("object").Op("&&").Id("kind").Op("!=").Lit("null")).BlockFunc(func(g *jen.Group) {
				try(g, false)
				g.Return(jen.Qual(implPkg, "NoVariant").Call(append([]jen.Code{jen.Id("b")}, names...)...))
			})
		}
		g.List(jen.Id("tag"), jen.Id("ok"), jen.Err()).Op(":=").Qual(implPkg, "Discriminator").Call(jen.Id("b"), jen.Lit(t.Discriminator))
		g.If(jen.Err().Op("!=").Nil().Op("||").Op("!").Id("ok")).Block(jen.Return(jen.Err()))
		g.Switch(jen.Id("tag")).BlockFunc(func(g *jen.Group) {
			for _, v := range t.Variants {
				if len(v.Tags) == 0 {
					continue
				}
				var tags []jen.Code
				for _, tag := range v.Tags {
					tags = append(tags, jen.Lit(tag))
				}
				g.Case(tags...).Return(jen.Qual(implPkg, "DecodeVariant").Call(jen.Id("b"), jen.Op("&").Id("u").Dot(v.Name)))
			}
		})
		g.Return(jen.Qual(implPkg, "UnknownDiscriminator").Call(jen.Lit(t.Discriminator), jen.Id("tag")))
	})
}

func orAll(conds []jen.Code) *jen.Statement {
	if len(conds) == 1 {
		return jen.Add(conds[0])
	}
	s := jen.Null()
	for i, c := range conds {
		if i > 0 {
			s = s.Op("||")
		}
		s = s.Add(c)
	}
	return jen.Parens(s)
}

// renderWithoutWriteOnly emits the method that drops writeOnly members from
// a copy of v before it is sent in a response.
func (e *typeEmitter) renderWithoutWriteOnly(f *jen.File, t *model.Type) {
	recv := "v"
	if t.Kind == model.KindUnion {
		recv = "u"
	}
	f.Comment(e.strip + " returns " + recv + " without its writeOnly members, to be sent in a response.")
	f.Func().Params(jen.Id(recv).Id(t.Name)).Id(e.strip).Params().Id(t.Name).BlockFunc(func(g *jen.Group) {
		for _, fl := range t.Fields {
			switch {
			case fl.WriteOnly:
				g.Id(recv).Dot(fl.Name).Op("=").Add(e.zeroValue(fl.Type))
			case fl.Type.ReachesWriteOnly():
				g.Id(recv).Dot(fl.Name).Op("=").Add(e.stripWriteOnly(jen.Id(recv).Dot(fl.Name), fl.Type))
			}
		}
		if ap := t.AdditionalProperties; ap != nil && ap.Type.ReachesWriteOnly() {
			g.Id(recv).Dot(ap.Name).Op("=").Add(e.stripWriteOnly(jen.Id(recv).Dot(ap.Name), ap.Type))
		}
		for _, v := range t.Variants {
			if v.Type.ReachesWriteOnly() {
				vt := model.GoType{Kind: model.GoPointer, Elem: &v.Type}
				g.Id(recv).Dot(v.Name).Op("=").Add(e.stripWriteOnly(jen.Id(recv).Dot(v.Name), vt))
			}
		}
		g.Return(jen.Id(recv))
	})
}

func (e *typeEmitter) zeroValue(t model.GoType) jen.Code {
	switch t.Kind {
	case model.GoNullable, model.GoOrEmpty:
		return jen.Add(e.typ(t)).Values()
	}
	return jen.Nil() // writeOnly fields are optional: pointers, slices, maps, any
}

// stripWriteOnly is an expression of type t: e without writeOnly members.
func (e *typeEmitter) stripWriteOnly(x jen.Code, t model.GoType) jen.Code {
	if t.Kind == model.GoNamed && t.Named.Kind == model.KindAlias {
		return e.stripWriteOnly(x, t.Named.Alias)
	}
	if t.Kind == model.GoNamed {
		return jen.Add(x).Dot(e.strip).Call()
	}
	var helper string
	switch t.Kind {
	case model.GoPointer:
		helper = "StripPointer"
	case model.GoSlice:
		helper = "StripSlice"
	case model.GoMap:
		helper = "StripMap"
	case model.GoNullable:
		helper = "StripNullable"
	case model.GoOrEmpty:
		helper = "StripOrEmpty"
	default:
		return x
	}
	elem := *t.Elem
	fn := jen.Func().Params(jen.Id("x").Add(e.typ(elem))).Add(e.typ(elem)).Block(jen.Return(e.stripWriteOnly(jen.Id("x"), elem)))
	if elem.Kind == model.GoNamed && elem.Named.Kind != model.KindAlias {
		fn = jen.Add(e.typ(elem)).Dot(e.strip)
	}
	return jen.Qual(implPkg, helper).Call(x, fn)
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
