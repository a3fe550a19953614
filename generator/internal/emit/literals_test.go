package emit

import (
	"strings"
	"testing"

	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// TestLiteralsQualifyThroughImporter: the runtime tables' literals name
// idemimpl as the importer calls it, so a template whose other import took
// the name idemimpl still compiles.
func TestLiteralsQualifyThroughImporter(t *testing.T) {
	im := newImporter()
	if n := im.name("example.com/other/idemimpl"); n != "idemimpl" {
		t.Fatalf("first import named %s", n)
	}
	for _, v := range []any{
		&model.Param{In: "query", Name: "limit", Key: "limit", Style: idemimpl.StyleForm},
		&model.BodyMedia{Type: "application/json", Decode: idemimpl.AsJSON},
		&model.SecurityScheme{Name: "key", Kind: idemimpl.SchemeAPIKeyHeader, Param: "X-Key"},
		&model.ReqSchema{Types: []idemimpl.Types{idemimpl.TypeString, idemimpl.TypeNull}, Format: idemimpl.FormatUUID, Has: idemimpl.HasMaxLength, MaxLength: 5,
			Props: []model.ReqProp{{Name: "a", Schema: 1}}, AdditionalProperties: idemimpl.NoAdditional,
			Discriminator: "kind", Mapping: []model.ReqMapping{{Value: "a", Schema: 1}}},
	} {
		got, err := literal(im, v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ReplaceAll(got, "idemimpl2.", ""), "idemimpl.") || !strings.Contains(got, "idemimpl2.") {
			t.Errorf("literal(%T) = %s, want idemimpl2. for every runtime identifier", v, got)
		}
	}
	want := `{Has: idemimpl2.HasMaxLength, Types: idemimpl2.TypeString|idemimpl2.TypeNull, Format: idemimpl2.FormatUUID, MaxLength: 5, ` +
		`Props: []idemimpl2.Prop{{Name: "a", Schema: 1}}, AdditionalProperties: idemimpl2.NoAdditional, Discriminator: "kind", Mapping: []idemimpl2.Mapping{{Value: "a", Schema: 1}}}`
	if got, _ := literal(im, &model.ReqSchema{Types: []idemimpl.Types{idemimpl.TypeString, idemimpl.TypeNull}, Format: idemimpl.FormatUUID, Has: idemimpl.HasMaxLength, MaxLength: 5,
		Props: []model.ReqProp{{Name: "a", Schema: 1}}, AdditionalProperties: idemimpl.NoAdditional,
		Discriminator: "kind", Mapping: []model.ReqMapping{{Value: "a", Schema: 1}}}); got != want {
		t.Errorf("schema literal\n got %s\nwant %s", got, want)
	}
	if _, err := literal(im, 42); err == nil {
		t.Error("literal of an int: no error")
	}
}
