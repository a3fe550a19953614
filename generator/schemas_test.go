package generator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
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

// TestJSONSchemas keeps the published JSON Schema of the config in step
// with Config (model's TestPolicyRulesAgree and TestLimitRulesAgree hold
// the extensions' schemas to the parsers).
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
}

// TestGeneratedPoliciesStart: every policy of every spec that generates is
// one the runtime accepts at start-up.
func TestGeneratedPoliciesStart(t *testing.T) {
	var cfgs []Config
	goldens, _ := filepath.Glob(filepath.Join("testdata", "golden", "*", "idemgen.yaml"))
	for _, g := range goldens {
		cfg, err := LoadConfig(g)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
	}
	for _, tc := range realSpecs[:4] {
		cfgs = append(cfgs, realSpecConfig(t, tc.file))
	}
	ops := 0
	for _, cfg := range cfgs {
		if err := cfg.normalise(); err != nil {
			t.Fatal(err)
		}
		spec, err := Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := spec.Model
		for _, o := range m.IdempotentOperations() {
			ops++
			op := idem.Operation{ID: o.ID, Method: o.Method, Pattern: o.Pattern, PathParams: o.PathParams, Policy: o.Policy.Runtime()}
			if err := op.Validate(); err != nil {
				t.Errorf("%s: %v", cfg.Spec, err)
			}
		}
	}
	if ops < 50 {
		t.Errorf("only %d idempotent operations checked", ops)
	}
}
