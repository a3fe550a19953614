// The files of a split package (Config.Split) beside the types'
// packages: an alias of each type in the package, and Unimplemented in a
// package of its own.

package emit

import (
	"fmt"
	"path"

	"github.com/dave/jennifer/jen"

	"github.com/idemgen/idemgen/generator/model"
)

// renderUnimplemented emits the package of Unimplemented when the types
// are split (its method per operation added 76 MiB to the server
// package's peak on Spotify ×10); the server template declares an alias
// of it.
func renderUnimplemented(m *model.Model) *jen.File {
	f := jen.NewFile(path.Base(model.UnimplementedDir))
	f.ImportName(idemPkg, "idem")
	f.ImportName("github.com/jackc/pgx/v5", "pgx")
	f.ImportName(m.Split.OpTypes, path.Base(model.OpTypesDir))
	f.Comment("Unimplemented answers 501 Not Implemented (idem.ErrNotImplemented, in the")
	f.Comment("profile's error body) for every operation of " + m.Source + "; the package")
	f.Comment(m.Package + " declares it as an alias (split: true).")
	f.Type().Id("Unimplemented").Struct()
	for _, o := range m.Operations {
		params := []jen.Code{jen.Qual("context", "Context")}
		if o.Idempotent {
			params = append(params, jen.Qual("github.com/jackc/pgx/v5", "Tx"))
		}
		params = append(params, jen.Qual(m.Split.OpTypes, o.RequestType()))
		f.Comment(fmt.Sprintf("%s answers 501 for %s (%s %s).", o.GoName, o.ID, o.Method, o.Path))
		f.Func().Params(jen.Id("Unimplemented")).Id(o.GoName).Params(params...).Params(jen.Qual(m.Split.OpTypes, o.ResponseType()), jen.Error()).Block(
			jen.Return(jen.Nil(), jen.Qual(idemPkg, "ErrNotImplemented")),
		)
	}
	return f
}

// renderAliases emits the types.gen.go of a split package: an alias in the
// package for every type the two packages of types declare, and a constant
// for every enum value, so that users write the same names either way.
func renderAliases(m *model.Model) *jen.File {
	f := jen.NewFile(m.Package)
	schema, ops := m.Split.SchemaTypes, m.Split.OpTypes
	f.ImportName(schema, path.Base(model.SchemaTypesDir))
	f.ImportName(ops, path.Base(model.OpTypesDir))
	f.Comment("The types of " + m.Source + " are declared in the packages " + model.SchemaTypesDir + " (its schemas')")
	f.Comment("and " + model.OpTypesDir + " (its operations' requests and responses), compiled apart because")
	f.Comment("the config splits them (split: true); these are their names in this package.")
	var types, consts []jen.Code
	for _, t := range m.Types {
		types = append(types, jen.Id(t.Name).Op("=").Qual(schema, t.Name))
		for _, v := range t.Enum {
			consts = append(consts, jen.Id(v.Name).Op("=").Qual(schema, v.Name))
		}
	}
	for _, s := range m.SharedResponses {
		types = append(types, jen.Id(s.TypeName).Op("=").Qual(ops, s.TypeName))
	}
	for _, o := range m.Operations {
		types = append(types, jen.Id(o.RequestType()).Op("=").Qual(ops, o.RequestType()), jen.Id(o.ResponseType()).Op("=").Qual(ops, o.ResponseType()))
		for _, r := range o.Responses {
			types = append(types, jen.Id(r.TypeName).Op("=").Qual(ops, r.TypeName))
		}
	}
	f.Type().Defs(types...)
	if len(consts) > 0 {
		f.Line()
		f.Comment("The enums' values.")
		f.Const().Defs(consts...)
	}
	return f
}
