package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// plaidLike is a spec of Plaid's shape: every operation's request and
// response bodies are schemas named like the types idemgen derives for
// the operation (XRequest, XResponse), 600 of them, which the namer
// settles as documented (the schema keeps the name, the operation's type
// is XRequest2); one request body also has a content key that is not a
// media type (examples), one of Plaid's real spec errors.
func plaidLike(ops int) string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.0\ninfo: {title: plaid-like, version: '1'}\nx-idempotent: {}\npaths:\n")
	for i := range ops {
		fmt.Fprintf(&b, "  /item/op%d:\n    post:\n      operationId: op%d\n      requestBody:\n        required: true\n        content:\n          application/json: {schema: {$ref: '#/components/schemas/Op%dRequest'}}\n", i, i, i)
		if i == 0 {
			b.WriteString("          examples: {a: {value: {}}}\n")
		}
		fmt.Fprintf(&b, "      responses:\n        '200':\n          description: ok\n          content:\n            application/json: {schema: {$ref: '#/components/schemas/Op%dResponse'}}\n", i)
	}
	b.WriteString("components:\n  schemas:\n")
	for i := range ops {
		fmt.Fprintf(&b, "    Op%dRequest: {type: object, properties: {client_id: {type: string}}}\n", i)
		fmt.Fprintf(&b, "    Op%dResponse: {type: object, properties: {request_id: {type: string}}}\n", i)
	}
	return b.String()
}

// TestWarningsReadable: generating a spec of Plaid's shape prints fewer than
// 20 warning lines (the 600 names settled as documented are one note, the
// content key that is not a media type says so), -v prints every warning,
// and -strict passes, none of them refusing a request or changing a type.
func TestWarningsReadable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plaid.yaml")
	write(t, path, plaidLike(300))
	out := filepath.Join(dir, "api")
	code, _, stderr := runCmd(t, "generate", "-spec", path, "-output", out)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 0 || len(lines) >= 20 {
		t.Errorf("exit %d, %d lines (want fewer than 20):\n%s", code, len(lines), stderr)
	}
	for _, want := range []string{
		"idemgen: note: 600 request and response types numbered because a schema has their name, as documented (-v lists them)\n",
		`idemgen: warning: plaid.yaml: operation "op0" request body: content "examples" is not a media type: it is left out` + "\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "(415)") {
		t.Errorf("the examples key is reported as a media type:\n%s", stderr)
	}

	code, _, stderr = runCmd(t, "generate", "-v", "-spec", path, "-output", out)
	if n := strings.Count(stderr, "idemgen: warning: plaid.yaml: Go identifier "); code != 0 || n != 600 {
		t.Errorf("-v: exit %d, %d clash warnings, want 600", code, n)
	}
	if !strings.Contains(stderr, `idemgen: warning: plaid.yaml: Go identifier Op7Request (package) is generated for both schema #/components/schemas/Op7Request and operation "op7" (POST /item/op7) #/paths/~1item~1op7/post; the latter is named Op7Request2`) {
		t.Errorf("-v does not print the clash of op7:\n%.2000s", stderr)
	}

	if code, _, stderr := runCmd(t, "generate", "-strict", "-spec", path, "-output", out); code != 0 {
		t.Errorf("-strict fails on warnings that neither refuse a request nor change a type: exit %d\n%s", code, stderr)
	}
	// A warning that a request may be refused still fails -strict.
	write(t, path, strings.Replace(plaidLike(3), "x-idempotent: {}\n", "x-idempotent: {}\nsecurity: [{undefinedKey: []}]\n", 1))
	if code, _, stderr := runCmd(t, "generate", "-strict", "-spec", path, "-output", out); code != 1 || !strings.Contains(stderr, "idemgen: -strict: 1 warning(s); nothing written") {
		t.Errorf("-strict with an undefined security scheme: exit %d\n%s", code, stderr)
	}
}
