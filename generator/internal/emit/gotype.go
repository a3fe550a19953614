package emit

// The one spelling of a Go type (spellType), and its two thin adapters:
// jennifer's code for types.gen.go and the split packages, and template
// source for the goType function, each recording imports its own way.

import (
	"github.com/dave/jennifer/jen"

	"github.com/idemgen/idemgen/generator/model"
)

// kindIdents is how the kinds of GoType that stand for a type of another
// package are spelt: its import path and name (a generic type, for
// GoNullable and GoOrEmpty, instantiated with the element).
var kindIdents = map[model.GoKind]goIdent{model.GoTime: {"time", "Time"}, model.GoUUID: {uuidPkg, "UUID"}, model.GoDate: {typePkg, "Date"}, model.GoFile: {typePkg, "File"}, model.GoReader: {"io", "Reader"}, model.GoNullable: {typePkg, "Nullable"}, model.GoOrEmpty: {typePkg, "OrEmpty"}}

// typeWriter writes the parts of a Go type in the form of one emitter.
type typeWriter[T any] interface {
	ident(id goIdent) T    // predeclared (path ""), or of another package
	named(t *model.Type) T // a type the generated code declares
	slice(elem T) T
	mapOf(elem T) T // map[string]elem
	pointer(elem T) T
	generic(id goIdent, arg T) T // id[arg]
}

// spellType spells t through w: the one definition of how each kind of
// GoType is written.
func spellType[T any](t model.GoType, w typeWriter[T]) T {
	switch t.Kind {
	case model.GoBuiltin:
		return w.ident(goIdent{name: t.Name})
	case model.GoNamed:
		return w.named(t.Named)
	case model.GoBytes:
		return w.slice(w.ident(goIdent{name: "byte"}))
	case model.GoSlice:
		return w.slice(spellType(*t.Elem, w))
	case model.GoMap:
		return w.mapOf(spellType(*t.Elem, w))
	case model.GoPointer:
		return w.pointer(spellType(*t.Elem, w))
	case model.GoNullable, model.GoOrEmpty:
		return w.generic(kindIdents[t.Kind], spellType(*t.Elem, w))
	}
	if id, ok := kindIdents[t.Kind]; ok {
		return w.ident(id)
	}
	return w.ident(goIdent{name: "any"})
}

// jenTypes writes types as jennifer code, which records the imports.
// schemaPkg qualifies the named types when they are declared in another
// package (the schema types' package of a split model); "" otherwise.
type jenTypes struct{ schemaPkg string }

func (w jenTypes) ident(id goIdent) jen.Code {
	if id.path == "" {
		return jen.Id(id.name)
	}
	return jen.Qual(id.path, id.name)
}

func (w jenTypes) named(t *model.Type) jen.Code {
	return w.ident(goIdent{w.schemaPkg, t.Name})
}

func (jenTypes) slice(elem jen.Code) jen.Code   { return jen.Index().Add(elem) }
func (jenTypes) mapOf(elem jen.Code) jen.Code   { return jen.Map(jen.String()).Add(elem) }
func (jenTypes) pointer(elem jen.Code) jen.Code { return jen.Op("*").Add(elem) }

func (w jenTypes) generic(id goIdent, arg jen.Code) jen.Code {
	return jen.Qual(id.path, id.name).Types(arg)
}

// sourceTypes writes types as Go source for templates, naming packages
// through the importer.
type sourceTypes struct{ im *importer }

func (w sourceTypes) ident(id goIdent) string {
	if id.path == "" {
		return id.name
	}
	return importRef{w.im, id.path}.String() + "." + id.name
}

func (sourceTypes) named(t *model.Type) string { return t.Name }
func (sourceTypes) slice(elem string) string   { return "[]" + elem }
func (sourceTypes) mapOf(elem string) string   { return "map[string]" + elem }
func (sourceTypes) pointer(elem string) string { return "*" + elem }
func (w sourceTypes) generic(id goIdent, arg string) string {
	return w.ident(id) + "[" + arg + "]"
}
