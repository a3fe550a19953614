package generator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
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
	if len(got) != 15 {
		t.Errorf("x-idempotent.schema.json has %d fields, want the 15 of docs/x-idempotent.md", len(got))
	}
}

// TestLimitRulesAgree: the JSON Schema of x-request-limits names every
// limit the generator parses, with the runtime's defaults and ranges
// (idemimpl.DefaultLimits, idemimpl.LimitRanges).
func TestLimitRulesAgree(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "schemas", "x-request-limits.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]struct {
			Default, Minimum, Maximum int
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	defaults, ranges := idemimpl.DefaultLimits().Fields(), idemimpl.LimitRanges()
	if len(schema.Properties) != len(defaults) {
		t.Errorf("x-request-limits.schema.json has %d limits, the runtime %d", len(schema.Properties), len(defaults))
	}
	for name, p := range schema.Properties {
		errs := &errList{}
		parseLimits(map[string]any{name: float64(p.Default)}, "", errs)
		if len(*errs) > 0 {
			t.Errorf("%s: %v", name, *errs)
		}
		if r := ranges[name]; p.Default != defaults[name] || p.Minimum != r.Min || p.Maximum != r.Max {
			t.Errorf("schema %s: default %d, %d..%d; the runtime's: default %d, %d..%d", name, p.Default, p.Minimum, p.Maximum, defaults[name], r.Min, r.Max)
		}
	}
}

// TestPolicyRulesAgree: the JSON Schema of x-idempotent, the generator's
// defaults and the constants it prints are checked against the runtime's
// one definition (idem.PolicyEnums, idem.DefaultPolicy, idem.Policy.Validate).
func TestPolicyRulesAgree(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "schemas", "x-idempotent.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs struct {
			Policy struct {
				Properties map[string]struct {
					Enum    []string `json:"enum"`
					Default any      `json:"default"`
					Items   struct {
						Minimum, Maximum int
					} `json:"items"`
				} `json:"properties"`
			} `json:"policy"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	props := schema.Defs.Policy.Properties
	enums := idem.PolicyEnums()
	defaults := map[string]any{}
	for name, p := range props {
		if !slices.Equal(p.Enum, enums[name]) {
			t.Errorf("schema enum of %s is %v, the runtime allows %v", name, p.Enum, enums[name])
		}
		if p.Default != nil {
			defaults[name] = p.Default
		}
	}
	errs := &errList{}
	patch, _ := parseExtension(defaults, "", errs)
	if got, want := patch.apply(Policy{}), DefaultPolicy(); len(*errs) > 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("schema defaults give %+v %v, the runtime's are %+v", got, *errs, want)
	}
	r := props["replayStatuses"].Items
	for status, ok := range map[int]bool{r.Minimum - 1: false, r.Minimum: true, r.Maximum: true, r.Maximum + 1: false} {
		p := idem.DefaultPolicy()
		p.ReplayStatuses = []int{status}
		if (p.Validate() == nil) != ok {
			t.Errorf("replayStatuses %d: schema says %v, runtime says %v", status, ok, p.Validate())
		}
	}

	// Every value of every enumerated field has the constant templates
	// print through idemConst (runtimeNames; TestRuntimeNames checks the
	// names against the runtime's source).
	kinds := map[string]string{"keyFormat": "KeyFormat", "mode": "Mode", "inFlight": "InFlight",
		"onSchemaChange": "OnSchemaChange", "onExpired": "OnExpired", "profile": "Profile"}
	for field, values := range enums {
		for _, v := range values {
			c, ok := policyValue(kinds[field], v)
			if !ok {
				t.Errorf("policyValue(%s): no field %s", kinds[field], field)
				continue
			}
			if id, err := runtimeName(c); err != nil || id.path != idemPkg || fmt.Sprint(c) != v || reflect.TypeOf(c).Name() != kinds[field] {
				t.Errorf("%s %q: constant %v (%v) of type %T", field, v, id, err, c)
			}
		}
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
		doc, err := loadSpec(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		m, err := buildModel(doc, &cfg, "")
		if err != nil {
			t.Fatal(err)
		}
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
