package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// TestLimitRulesAgree: the JSON Schema of x-request-limits names every
// limit the generator parses, with the runtime's defaults and ranges
// (idemimpl.DefaultLimits, idemimpl.LimitRanges).
func TestLimitRulesAgree(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "schemas", "x-request-limits.schema.json"))
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

// TestPolicyRulesAgree: the JSON Schema of x-idempotent (its fields, the
// values of each, the defaults) and the parser are checked against the
// runtime's one definition (idem.PolicyEnums, idem.DefaultPolicy,
// idem.Policy.Validate); emit's TestPolicyConstants holds the constants
// templates print to the same enums.
func TestPolicyRulesAgree(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "schemas", "x-idempotent.schema.json"))
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
	for k := range props {
		errs := &errList{}
		parseExtension(map[string]any{k: any("x")}, "", errs)
		for _, e := range *errs {
			if strings.Contains(e, "unknown field") {
				t.Errorf("x-idempotent.schema.json has %s, the parser does not know it", k)
			}
		}
	}
	if len(props) != 15 {
		t.Errorf("x-idempotent.schema.json has %d fields, want the 15 of docs/x-idempotent.md", len(props))
	}
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
}
