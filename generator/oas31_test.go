package generator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestNullUnion generates the server of testdata/nullunion/openapi.yaml
// (OpenAPI 3.1's nullable unions: a oneOf or anyOf member that allows only
// null) and runs testdata/nullunion/nullunion_test.go in the generated
// package over real HTTP: valid values reach the handler, typed as the
// member that matched, and invalid ones are refused with 400.
func TestNullUnion(t *testing.T) {
	t.Logf("%s", runGeneratedTests(t, "nullunion"))
}

// refSiblingsSpec has $refs with sibling keywords: in OpenAPI 3.1 they
// apply beside the referenced schema, in 3.0 they are ignored. %s is the
// version; %s the way the constraining members are written.
const refSiblingsSpec = `openapi: %s
info: {title: t, version: '1'}
paths:
  /q:
    put:
      operationId: putQ
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Q'}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Media', description: The answer., readOnly: true}
components:
  schemas:
    Media:
      description: A medium.
      type: object
      properties:
        url: {type: string}
    Kind: {type: string, enum: [a, b]}
    Short: {type: string, maxLength: 20}
    Q:
      type: object
      required: [kind]
      properties:
        question: {$ref: '#/components/schemas/Media', description: The question.}
        answer: {$ref: '#/components/schemas/Media'}
        hint: {$ref: '#/components/schemas/Media', summary: S, title: T, deprecated: true, examples: [{url: x}]}
        kind: {$ref: '#/components/schemas/Kind', title: K}
        list: {type: array, items: {$ref: '#/components/schemas/Kind', description: One kind.}}
%s`

// TestRefSiblings: a 3.1 $ref whose siblings only annotate is typed as the
// referenced schema, as the same document declared 3.0.3 (whose $refs
// ignore their siblings) is, with no second type (Media2) and no warning;
// siblings that constrain make an allOf of the two, typed as the same
// allOf written out.
func TestRefSiblings(t *testing.T) {
	gen := func(version, constrained string) (string, []Warning) {
		t.Helper()
		spec := fmt.Sprintf(refSiblingsSpec, version, constrained)
		files, warnings, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Output: "api"})
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		return uncommented(fileNamed(files, "types.gen.go")[0].Content), warnings
	}
	annotated31, w31 := gen("3.1.0", "")
	annotated30, w30 := gen("3.0.3", "")
	if annotated31 != annotated30 {
		t.Errorf("3.1 and 3.0.3 generate different types:\n%s", lineDiff(annotated30, annotated31))
	}
	for _, w := range append(w31, w30...) {
		t.Errorf("warning: %s", w)
	}
	// Siblings that say something of one use (readOnly, writeOnly,
	// default, which 3.0 ignores) do not make a type either.
	used31, w31 := gen("3.1.0", `        secret: {$ref: '#/components/schemas/Media', writeOnly: true}
        made: {$ref: '#/components/schemas/Kind', readOnly: true, default: a}
`)
	for _, want := range []string{"Secret *Media `json:\"secret,omitzero\"`", "Made *Kind `json:\"made,omitzero\"`"} {
		if !strings.Contains(squeezeBlanks(used31), squeezeBlanks(want)) {
			t.Errorf("types lack %q:\n%s", want, used31)
		}
	}
	for _, w := range w31 {
		t.Errorf("warning: %s", w)
	}
	for _, types := range []string{annotated31, used31} {
		if strings.Contains(types, "Media2") || strings.Contains(types, "Kind2") {
			t.Errorf("a second type of one schema:\n%s", types)
		}
	}
	constrained31, w31 := gen("3.1.0", `        tight: {$ref: '#/components/schemas/Short', maxLength: 10}
        sure: {$ref: '#/components/schemas/Media', required: [url]}
`)
	explicit30, w30 := gen("3.0.3", `        tight: {allOf: [{$ref: '#/components/schemas/Short'}, {maxLength: 10}]}
        sure: {allOf: [{$ref: '#/components/schemas/Media'}, {required: [url]}]}
`)
	if constrained31 != explicit30 {
		t.Errorf("3.1 siblings that constrain are not typed as the allOf:\n%s", lineDiff(explicit30, constrained31))
	}
	for _, want := range []string{"Tight *QTight", "type QTight = Short", "URL string `json:\"url\"`"} {
		if !strings.Contains(squeezeBlanks(constrained31), squeezeBlanks(want)) {
			t.Errorf("types lack %q:\n%s", want, constrained31)
		}
	}
	for _, w := range append(w31, w30...) {
		t.Errorf("warning: %s", w)
	}
}

// uncommented is Go source without its comments, a line for each line
// that holds more.
func uncommented(src []byte) string {
	var out []string
	for _, line := range strings.Split(string(src), "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimRight(line, " \t"); line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// lineDiff lists the lines of got that want lacks (-) and has (+).
func lineDiff(want, got string) string {
	var b strings.Builder
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for _, l := range wl {
		if !slices.Contains(gl, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range gl {
		if !slices.Contains(wl, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
