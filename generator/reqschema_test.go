package generator

import (
	"strings"
	"testing"
)

// TestRequiredWithoutProperties: a schema that only lists required members
// (GitHub's `oneOf: [{required: [id]}, {required: [owner, repo, number]}]`
// beside the properties) must keep them in its Schemas entry, or every
// body matches both members and a valid one is refused with "matches 2 of
// the schemas". Caught by TestRealSpecs (GitHub's projects/add-item-for-org)
// before this test; mutation tried: Props only from properties (this test
// and TestRealSpecs/api fail).
func TestRequiredWithoutProperties(t *testing.T) {
	spec := `openapi: 3.0.3
info: {title: t, version: "1"}
x-idempotent: {}
paths:
  /items:
    post:
      operationId: addItem
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties:
                id: {type: integer}
                owner: {type: string}
              oneOf:
                - required: [id]
                - required: [owner, repo]
      responses:
        "201": {description: created}
`
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Package: "api", Output: "api"})
	if err != nil {
		t.Fatal(err)
	}
	var all string
	for _, f := range files {
		all += string(f.Content)
	}
	for _, want := range []string{
		`Props: []idemimpl.Prop{{Name: "id", Schema: 0, Required: true}}`,
		`Props: []idemimpl.Prop{{Name: "owner", Schema: 0, Required: true}, {Name: "repo", Schema: 0, Required: true}}`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the Schemas table lacks %s", want)
		}
	}
}
