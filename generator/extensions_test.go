package generator

import (
	"strings"
	"testing"
)

// TestMisspeltExtensionsFailLint: a near miss of x-idempotent at the root
// or on an operation fails lint as it fails generate (TestSpecErrors): a
// misspelt `x-idempotant: {mode: lease}` would otherwise run the operation
// in atomic mode, the root's default, without a word. A vendor extension
// that is merely alike (x-idempotency-key, x-request-id) is left alone.
func TestMisspeltExtensionsFailLint(t *testing.T) {
	for _, tc := range []struct{ root, op, want string }{
		{"x-idempotent: {}", "x-idempotant: {mode: lease}",
			`openapi.yaml: line 8: operation "createOrder": x-idempotant: not an extension idemgen reads (did you mean x-idempotent?)`},
		{"x-idempotent: {}", "X-Idempotent: {mode: lease}",
			`openapi.yaml: line 8: operation "createOrder": X-Idempotent: not an extension idemgen reads (did you mean x-idempotent?)`},
		{"x-idempotnet: {}", "x-idempotent: {}",
			`openapi.yaml: line 3: x-idempotnet: not an extension idemgen reads (did you mean x-idempotent?)`},
		{"x-idempotent: {}\nx-idempotency-key: {a: b}", "x-request-id: {a: b}", ""},
	} {
		findings, err := Lint(Config{Spec: "openapi.yaml", SpecData: []byte(orderWith(tc.root, tc.op))})
		if err != nil {
			t.Fatal(err)
		}
		var errs []string
		for _, f := range findings {
			if f.Severity == SeverityError {
				errs = append(errs, f.Message)
			}
		}
		if got := strings.Join(errs, "\n"); got != tc.want {
			t.Errorf("%s / %s: lint errors:\n%s\nwant:\n%s", tc.root, tc.op, got, tc.want)
		}
	}
}
