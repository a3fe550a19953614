package generator

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestClientConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := LoadConfig(write("a.yaml", "spec: s.yaml\nclient: true\n"))
	if err != nil || !cfg.Client.Enabled || cfg.Client.Output != "" {
		t.Fatalf("client: true: %+v, %v", cfg.Client, err)
	}
	cfg, err = LoadConfig(write("b.yaml", "spec: s.yaml\nclient:\n  output: apiclient\n  package: pc\n"))
	if err != nil || !cfg.Client.Enabled || cfg.Client.Output != filepath.Join(dir, "apiclient") || cfg.Client.Package != "pc" {
		t.Fatalf("client mapping: %+v, %v", cfg.Client, err)
	}
	if cfg, err = LoadConfig(write("c.yaml", "spec: s.yaml\nclient: false\n")); err != nil || cfg.Client.Enabled {
		t.Fatalf("client: false: %+v, %v", cfg.Client, err)
	}
	for name, content := range map[string]string{
		"d.yaml": "spec: s.yaml\nclient: 3\n",
		"e.yaml": "spec: s.yaml\nclient:\n  outptu: x\n",
	} {
		if _, err := LoadConfig(write(name, content)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v, want one naming the file", content, err)
		}
	}
	// No client asked for: no client.gen.go.
	files, _, err := Generate(Config{Spec: filepath.Join("testdata", "golden", "payments", "openapi.yaml"), Output: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "client.gen.go" {
			t.Error("client.gen.go without client in the config")
		}
	}
}

func TestClientNamesClash(t *testing.T) {
	spec := `openapi: 3.0.3
info: {title: t, version: '1'}
paths: {}
components:
  schemas:
    Client: {type: object, properties: {name: {type: string}}}
`
	// Beside the client, the schema yields the name (a warning says so).
	_, warnings, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Output: t.TempDir(), Client: ClientConfig{Enabled: true}})
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0].Message, "Go identifier Client (package) is generated for both idemgen and schema #/components/schemas/Client; the latter is named Client2") {
		t.Fatalf("a schema named Client beside a generated client: %v %v", warnings, err)
	}
	// In a package of its own the client's names do not clash.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Output: filepath.Join(dir, "api"),
		Client: ClientConfig{Enabled: true, Output: filepath.Join(dir, "client")}})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range files {
		if f.Name == "../client/client.gen.go" {
			found = strings.Contains(string(f.Content), "package client\n") && strings.Contains(string(f.Content), `"example.com/m/api"`)
		}
	}
	if !found {
		t.Errorf("no ../client/client.gen.go of package client importing example.com/m/api among %v", names(files))
	}
}

func names(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

const clientSpec = `openapi: 3.0.3
info: {title: things, version: '1'}
x-idempotent: {keyFormat: uuidv7}
paths:
  /things/{kind}/{id}:
    get:
      operationId: findThing
      summary: Find a thing
      parameters:
        - {name: kind, in: path, required: true, schema: {type: string}}
        - {name: id, in: path, required: true, schema: {type: string, format: uuid}}
        - {name: limit, in: query, schema: {type: integer, format: int32}}
        - {name: tag, in: query, schema: {type: array, items: {type: string, enum: [red, "blue green"]}}}
        - {name: ids, in: query, explode: false, schema: {type: array, items: {type: integer, format: int64}}}
        - {name: since, in: query, required: true, schema: {type: string, format: date-time}}
        - {name: ratio, in: query, schema: {type: number}}
        - {name: X-Flag, in: header, schema: {type: boolean}}
        - {name: session, in: cookie, schema: {type: string}}
      responses:
        '200':
          description: The thing.
          headers: {X-Version: {schema: {type: string}}}
          content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}
        '404': {description: None.}
  /things/{id}:
    delete:
      operationId: deleteThing
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '204': {description: Deleted.}
  /things:
    post:
      operationId: createThing
      parameters:
        - {name: Idempotency-Key, in: header, schema: {type: string}}
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}
      responses:
        '201': {description: Created., content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}}
        4XX: {description: Refused., content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}}
        default: {description: Problem., content: {application/problem+json: {schema: {type: object}}}}
components:
  schemas:
    Thing:
      type: object
      required: [name]
      properties: {name: {type: string}}
`

// clientRoundTrip is a test of the generated module: the generated client
// calls the generated server, which must decode exactly what the client
// was given.
const clientRoundTrip = `package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idemclient"

	"example.com/generated/api"
)

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

type server struct {
	api.Unimplemented
	got chan api.FindThingRequest
}

func (s server) FindThing(ctx context.Context, req api.FindThingRequest) (api.FindThingResponse, error) {
	s.got <- req
	if req.Kind == "missing" {
		return api.FindThing404Response{}, nil
	}
	return api.FindThing200Response{Body: api.Thing{Name: req.Kind}, XVersion: "v9"}, nil
}

func TestRoundTrip(t *testing.T) {
	s := server{got: make(chan api.FindThingRequest, 1)}
	srv := httptest.NewServer(api.NewHandler(s, nil))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	limit, ratio, flag, session := int32(7), 0.25, true, "s1-x"
	want := api.FindThingRequest{
		Kind: "a b/c?d", ID: uuid.MustParse("0190a8e2-7c3b-7d4e-8f00-000000000001"), Limit: &limit,
		Tag: []api.FindThingTagItem{"red", "blue green"}, IDs: []int64{1, -2}, Since: time.Date(2024, 1, 2, 3, 4, 5, 600, time.UTC),
		Ratio: &ratio, XFlag: &flag, Session: &session,
	}
	res, err := c.FindThing(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	got := <-s.got
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the server decoded\n%s\nthe client was given\n%s", show(got), show(want))
	}
	ok, isOK := res.Response.(api.FindThing200Response)
	if !isOK || ok.Body.Name != want.Kind || ok.XVersion != "v9" || res.Attempts != 1 || res.Key != "" {
		t.Errorf("result %+v", res)
	}

	// Optional parameters left out are absent on the server too.
	min := api.FindThingRequest{Kind: "missing", ID: want.ID, Since: want.Since}
	res, err = c.FindThing(context.Background(), min)
	if got := <-s.got; err != nil || !reflect.DeepEqual(got, min) {
		t.Errorf("decoded %s (%v), sent %s", show(got), err, show(min))
	}
	if _, ok := res.Response.(api.FindThing404Response); !ok {
		t.Errorf("404: %T", res.Response)
	}

	// Unimplemented answers 501 problem+json: an *idemclient.Error, and a
	// 501 is never retried, though DELETE is idempotent.
	_, err = c.DeleteThing(context.Background(), api.DeleteThingRequest{ID: "x"})
	var e *idemclient.Error
	if !errors.As(err, &e) || e.Status != 501 || e.Attempts != 1 || e.Problem == nil || e.Key != "" {
		t.Fatalf("deleteThing on Unimplemented: %#v", err)
	}
}
`

// TestClientPackageOfItsOwn generates the server into api/ and the client
// into apiclient/ of a directory of the run's module (runModule), builds
// and vets both, and runs a round trip of typed parameters through the
// generated client and server.
func TestClientPackageOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code; skipped with -short")
	}
	dir := modulePackage(t, "clientpkg", nil)
	cfg := Config{Spec: filepath.Join(dir, "openapi.yaml"), Output: filepath.Join(dir, "api"),
		Client: ClientConfig{Enabled: true, Output: filepath.Join(dir, "apiclient")}}
	if err := os.WriteFile(cfg.Spec, []byte(clientSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	files, _, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(cfg.Output, files); err != nil {
		t.Fatal(err)
	}
	roundTrip := strings.Replace(clientRoundTrip, `"example.com/generated/api"`, strconv.Quote(generatedModule+"/clientpkg/api"), 1)
	if err := os.WriteFile(filepath.Join(dir, "apiclient", "roundtrip_test.go"), []byte(roundTrip), 0o644); err != nil {
		t.Fatal(err)
	}
	// -check sees the client file too.
	if d, err := Diff(cfg.Output, files); err != nil || d != "" {
		t.Errorf("Diff after Write: %q, %v", d, err)
	}
	moduleResult(t, "clientpkg")
}
