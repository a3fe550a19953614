package generator

import "testing"

// TestNullUnion generates the server of testdata/nullunion/openapi.yaml
// (OpenAPI 3.1's nullable unions: a oneOf or anyOf member that allows only
// null) and runs testdata/nullunion/nullunion_test.go in the generated
// package over real HTTP: valid values reach the handler, typed as the
// member that matched, and invalid ones are refused with 400.
func TestNullUnion(t *testing.T) {
	t.Logf("%s", runGeneratedTests(t, "nullunion"))
}
