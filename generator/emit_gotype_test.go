package generator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
)

// TestSpellTypeAdapters: jennifer's and the templates' spelling of every
// kind of GoType are the same source, since both go through spellType.
func TestSpellTypeAdapters(t *testing.T) {
	pet := &Type{Name: "Pet"}
	elem := func(k GoKind, e GoType) GoType { return GoType{Kind: k, Elem: &e} }
	str := GoType{Kind: GoBuiltin, Name: "string"}
	for _, tc := range []struct {
		t    GoType
		want string
	}{
		{GoType{Kind: GoAny}, "any"},
		{str, "string"},
		{GoType{Kind: GoNamed, Named: pet}, "Pet"},
		{GoType{Kind: GoTime}, "time.Time"},
		{GoType{Kind: GoUUID}, "uuid.UUID"},
		{GoType{Kind: GoDate}, "idemtype.Date"},
		{GoType{Kind: GoBytes}, "[]byte"},
		{GoType{Kind: GoReader}, "io.Reader"},
		{GoType{Kind: GoFile}, "idemtype.File"},
		{elem(GoSlice, str), "[]string"},
		{elem(GoMap, elem(GoPointer, GoType{Kind: GoNamed, Named: pet})), "map[string]*Pet"},
		{elem(GoNullable, elem(GoSlice, GoType{Kind: GoTime})), "idemtype.Nullable[[]time.Time]"},
		{elem(GoOrEmpty, GoType{Kind: GoUUID}), "idemtype.OrEmpty[uuid.UUID]"},
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
