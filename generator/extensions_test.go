package generator

import (
	"strings"
	"testing"
)

// TestMisspeltExtensions: x-idempotant, X-Idempotent and x-idempotnet, at
// the root and on an operation, fail generate and lint with "did you mean
// x-idempotent", at their line: misspelt, `{mode: lease}` would otherwise
// be dropped and the operation run in atomic mode, the root's default. A
// vendor extension that is merely alike (x-idempotency-key,
// x-request-id) is left alone.
func TestMisspeltExtensions(t *testing.T) {
	for _, typo := range []string{"x-idempotant", "X-Idempotent", "x-idempotnet"} {
		for _, tc := range []struct{ where, root, op, want string }{
			{"root", typo + ": {mode: lease}", "x-idempotent: {}",
				`openapi.yaml: line 3: ` + typo + `: not an extension idemgen reads (did you mean x-idempotent?)`},
			{"operation", "x-idempotent: {}", typo + ": {mode: lease}",
				`openapi.yaml: line 8: operation "createOrder": ` + typo + `: not an extension idemgen reads (did you mean x-idempotent?)`},
		} {
			spec := []byte(orderWith(tc.root, tc.op))
			_, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: spec, Output: t.TempDir()})
			if err == nil || err.Error() != tc.want {
				t.Errorf("%s on the %s: generate: %v\nwant: %s", typo, tc.where, err, tc.want)
			}
			if got := lintErrors(t, spec); got != tc.want {
				t.Errorf("%s on the %s: lint errors:\n%s\nwant:\n%s", typo, tc.where, got, tc.want)
			}
		}
	}
	alike := []byte(orderWith("x-idempotent: {}\nx-idempotency-key: {a: b}", "x-request-id: {a: b}"))
	if got := lintErrors(t, alike); got != "" {
		t.Errorf("lint errors for extensions that are merely alike:\n%s", got)
	}
}

// lintErrors are the error findings of Lint for spec, one a line.
func lintErrors(t *testing.T, spec []byte) string {
	t.Helper()
	findings, err := Lint(Config{Spec: "openapi.yaml", SpecData: spec})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, f := range findings {
		if f.Severity == SeverityError {
			errs = append(errs, f.Message)
		}
	}
	return strings.Join(errs, "\n")
}
