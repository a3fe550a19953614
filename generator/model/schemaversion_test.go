package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/internal/load"
)

const versionSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /nodes:
    get:
      operationId: getNode
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Node'}
  /pairs:
    get:
      operationId: getPair
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/A'}
  /other:
    get:
      operationId: getOther
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Leaf'}}
components:
  schemas:
    Node:
      type: object
      properties:
        name: {type: string}
        children: {type: array, items: {$ref: '#/components/schemas/Node'}}
        leaf: {$ref: '#/components/schemas/Leaf'}
    A:
      type: object
      properties:
        b: {$ref: '#/components/schemas/B'}
    B:
      type: object
      properties:
        a: {$ref: '#/components/schemas/A'}
        n: {type: integer}
    Leaf: {type: object, properties: {x: {type: string}}}
`

func versionsOf(t *testing.T, spec string) map[string]string {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	v := newVersioner(doc)
	out := map[string]string{}
	for _, path := range doc.Paths.InMatchingOrder() {
		for _, op := range doc.Paths.Value(path).Operations() {
			out[op.OperationID] = v.of(op)
		}
	}
	return out
}

// TestSchemaVersions: a version changes exactly when something reachable
// from the operation's responses changes, recursion included, and is the
// same for the same document.
func TestSchemaVersions(t *testing.T) {
	base := versionsOf(t, versionSpec)
	if again := versionsOf(t, versionSpec); again["getNode"] != base["getNode"] || again["getPair"] != base["getPair"] {
		t.Fatalf("versions differ between two runs: %v %v", base, again)
	}
	for _, v := range base {
		if len(v) != 12 {
			t.Fatalf("version %q is not 12 hex digits", v)
		}
	}
	tests := []struct {
		name, old, new string
		changed        []string // operations whose version must change; the others must not
	}{
		{"leaf property added", "Leaf: {type: object, properties: {x: {type: string}}}",
			"Leaf: {type: object, properties: {x: {type: string}, y: {type: string}}}", []string{"getNode", "getOther"}},
		{"recursive member changes", "        n: {type: integer}", "        n: {type: string}", []string{"getPair"}},
		{"self-recursive schema changes", "        name: {type: string}", "        name: {type: integer}", []string{"getNode"}},
		{"description only", "    Leaf: {type: object,", "    Leaf: {description: leaves, type: object,", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := strings.Replace(versionSpec, tc.old, tc.new, 1)
			if spec == versionSpec {
				t.Fatalf("%q not in the spec", tc.old)
			}
			got := versionsOf(t, spec)
			for op, v := range base {
				want := v
				changed := false
				for _, c := range tc.changed {
					changed = changed || c == op
				}
				if changed && got[op] == want {
					t.Errorf("%s: version %s did not change", op, want)
				}
				if !changed && got[op] != want {
					t.Errorf("%s: version changed %s -> %s", op, want, got[op])
				}
			}
		})
	}
}

// TestSchemaVersionsStripe hashes every operation of Stripe's spec, whose
// shared, recursive schemas made the former inlining hash exponential (it
// ran for 15 minutes and was killed at 24 GB).
func TestSchemaVersionsStripe(t *testing.T) {
	path := filepath.Join("..", "testdata", "specs", "stripe-spec3.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := load.Document(data, path, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := newVersioner(doc)
	versions := map[string]bool{}
	n := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		for _, op := range doc.Paths.Value(path).Operations() {
			versions[v.of(op)] = true
			n++
		}
	}
	if n < 400 || len(versions) < n/4 {
		t.Errorf("%d operations, %d distinct versions", n, len(versions))
	}
}
