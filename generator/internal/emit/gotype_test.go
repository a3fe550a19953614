package emit

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"

	"github.com/idemgen/idemgen/generator/model"
)

// TestSpellTypeAdapters: jennifer's and the templates' spelling of every
// kind of GoType are the same source, since both go through spellType.
func TestSpellTypeAdapters(t *testing.T) {
	pet := &model.Type{Name: "Pet"}
	elem := func(k model.GoKind, e model.GoType) model.GoType { return model.GoType{Kind: k, Elem: &e} }
	str := model.GoType{Kind: model.GoBuiltin, Name: "string"}
	for _, tc := range []struct {
		t    model.GoType
		want string
	}{
		{model.GoType{Kind: model.GoAny}, "any"},
		{str, "string"},
		{model.GoType{Kind: model.GoNamed, Named: pet}, "Pet"},
		{model.GoType{Kind: model.GoTime}, "time.Time"},
		{model.GoType{Kind: model.GoUUID}, "uuid.UUID"},
		{model.GoType{Kind: model.GoDate}, "idemtype.Date"},
		{model.GoType{Kind: model.GoBytes}, "[]byte"},
		{model.GoType{Kind: model.GoReader}, "io.Reader"},
		{model.GoType{Kind: model.GoFile}, "idemtype.File"},
		{elem(model.GoSlice, str), "[]string"},
		{elem(model.GoMap, elem(model.GoPointer, model.GoType{Kind: model.GoNamed, Named: pet})), "map[string]*Pet"},
		{elem(model.GoNullable, elem(model.GoSlice, model.GoType{Kind: model.GoTime})), "idemtype.Nullable[[]time.Time]"},
		{elem(model.GoOrEmpty, model.GoType{Kind: model.GoUUID}), "idemtype.OrEmpty[uuid.UUID]"},
	} {
		if got := spellType(tc.t, sourceTypes{newImporter()}); got != tc.want {
			t.Errorf("template spelling of kind %d: %s, want %s", tc.t.Kind, got, tc.want)
		}
		f := jen.NewFile("p")
		f.ImportName(typePkg, "idemtype")
		f.ImportName(uuidPkg, "uuid")
		f.Var().Id("x").Add(spellType(tc.t, jenTypes{}))
		if got, want := fmt.Sprintf("%#v", f), "var x "+tc.want; !slices.Contains(strings.Split(got, "\n"), want) {
			t.Errorf("jennifer spelling of kind %d:\n%s\nwant %s", tc.t.Kind, got, want)
		}
	}
}

// TestGoDefault: a default value is spelt as an expression of its type:
// a conversion for a number, the constant of an enum value (goDefault).
func TestGoDefault(t *testing.T) {
	kind := &model.Type{Name: "AccountKind", Kind: model.KindEnum, Enum: []model.EnumValue{{Name: "AccountKindPerson", Value: "person"}, {Name: "AccountKindBusiness", Value: "business"}}}
	alias := &model.Type{Name: "Kind", Kind: model.KindAlias, Alias: model.GoType{Kind: model.GoNamed, Named: kind}}
	for _, tc := range []struct {
		d    model.Default
		want string
	}{
		{model.Default{Type: model.GoType{Kind: model.GoBuiltin, Name: "int64"}, Value: float64(10)}, "int64(10)"},
		{model.Default{Type: model.GoType{Kind: model.GoBuiltin, Name: "int64"}, Value: 1.5}, ""},
		{model.Default{Type: model.GoType{Kind: model.GoBuiltin, Name: "float32"}, Value: 1.5}, "float32(1.5)"},
		{model.Default{Type: model.GoType{Kind: model.GoBuiltin, Name: "string"}, Value: "eur"}, `"eur"`},
		{model.Default{Type: model.GoType{Kind: model.GoNamed, Named: kind}, Value: "business"}, "AccountKindBusiness"},
		{model.Default{Type: model.GoType{Kind: model.GoNamed, Named: alias}, Value: "person"}, "AccountKindPerson"},
		{model.Default{Type: model.GoType{Kind: model.GoMap}, Value: map[string]any{}}, ""},
	} {
		goDefault := funcMap(newImporter())["goDefault"].(func(*model.Default) string)
		if got := goDefault(&tc.d); got != tc.want {
			t.Errorf("goDefault(%v of %v) = %q, want %q", tc.d.Value, tc.d.Type.Kind, got, tc.want)
		}
	}
}
