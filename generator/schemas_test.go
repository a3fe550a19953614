package generator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func schemaProps(t *testing.T, file string, path ...string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "schemas", file))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m["properties"].(map[string]any) {
			if !yield(k) {
				return
			}
		}
	})
}

// TestJSONSchemas keeps the published JSON Schemas in step with the code.
func TestJSONSchemas(t *testing.T) {
	var cfgKeys []string
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		if tag := strings.Split(ct.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
			cfgKeys = append(cfgKeys, tag)
		}
	}
	slices.Sort(cfgKeys)
	if got := schemaProps(t, "idemgen.schema.json"); !slices.Equal(got, cfgKeys) {
		t.Errorf("idemgen.schema.json properties %v, Config has %v", got, cfgKeys)
	}
	got := schemaProps(t, "x-idempotent.schema.json", "$defs", "policy")
	for _, k := range got {
		errs := &errList{}
		val := any("x")
		parseExtension(map[string]any{k: val}, "", errs)
		for _, e := range *errs {
			if strings.Contains(e, "unknown field") {
				t.Errorf("x-idempotent.schema.json has %s, the parser does not know it", k)
			}
		}
	}
	if len(got) != 14 {
		t.Errorf("x-idempotent.schema.json has %d fields, want the 14 of docs/design.md", len(got))
	}
}
