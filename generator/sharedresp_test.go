package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedRespSpec: NotFound answered by createNote and getNote under 404,
// and by deleteNote under both 404 and 410; Problem answered by all three
// as default (a type with a Status field).
const sharedRespSpec = `openapi: 3.0.3
info: {title: notes, version: '1'}
paths:
  /notes:
    post:
      operationId: createNote
      responses:
        '201': {description: created}
        '404': {$ref: '#/components/responses/NotFound'}
        default: {$ref: '#/components/responses/Problem'}
  /notes/{id}:
    get:
      operationId: getNote
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object, properties: {id: {type: integer}}}}}}
        '404': {$ref: '#/components/responses/NotFound'}
        default: {$ref: '#/components/responses/Problem'}
    delete:
      operationId: deleteNote
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '204': {description: deleted}
        '404': {$ref: '#/components/responses/NotFound'}
        '410': {$ref: '#/components/responses/NotFound'}
        default: {$ref: '#/components/responses/Problem'}
components:
  responses:
    NotFound:
      description: No such note.
      headers:
        X-Reason: {schema: {type: string, enum: [missing, deleted]}}
      content:
        application/json:
          schema: {type: object, properties: {note: {type: integer}}}
    Problem:
      description: Something went wrong.
      content:
        application/json:
          schema: {type: object, properties: {title: {type: string}}}
`

// sharedRespTest is compiled into the generated package and run: one
// helper's NotFoundResponse answers two operations, and the client reads
// it back under each operation's own name for it.
const sharedRespTest = `package api

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

type srv struct{ Unimplemented }

func notFound(id int64) NotFoundResponse {
	reason := NotFoundResponseXReasonMissing
	return NotFoundResponse{Body: NotFoundResponseBody{Note: &id}, XReason: &reason}
}

func (srv) CreateNote(ctx context.Context, req CreateNoteRequest) (CreateNoteResponse, error) {
	return notFound(0), nil
}

func (srv) GetNote(ctx context.Context, req GetNoteRequest) (GetNoteResponse, error) {
	if req.ID == 7 {
		return ProblemResponse{Status: 422, Body: ProblemResponseBody{Title: &[]string{"down"}[0]}}, nil
	}
	return notFound(req.ID), nil
}

func (srv) DeleteNote(ctx context.Context, req DeleteNoteRequest) (DeleteNoteResponse, error) {
	return DeleteNote410Response{}, nil
}

func TestSharedResponses(t *testing.T) {
	h := NewHandler(srv{}, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/notes/5", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 404 || rec.Header().Get("X-Reason") != "missing" || !strings.Contains(string(body), ` + "`" + `"note":5` + "`" + `) {
		t.Errorf("GET /notes/5: %d %v %s", rec.Code, rec.Header(), body)
	}

	s := httptest.NewServer(h)
	defer s.Close()
	c, err := NewClient(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.GetNote(context.Background(), GetNoteRequest{ID: 5})
	if err != nil {
		t.Fatal(err)
	}
	nf, ok := res.Response.(GetNote404Response)
	if !ok || nf.Body.Note == nil || *nf.Body.Note != 5 || nf.XReason == nil || *nf.XReason != NotFoundResponseXReasonMissing {
		t.Errorf("getNote 404: %#v", res.Response)
	}
	res, err = c.GetNote(context.Background(), GetNoteRequest{ID: 7})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := res.Response.(ProblemResponse); !ok || p.Status != 422 || p.Body.Title == nil || *p.Body.Title != "down" {
		t.Errorf("getNote default: %#v", res.Response)
	}
}
`

// TestSharedResponses: a response component several operations answer
// with is one struct (named after the component), each operation's
// response type an alias of it; an operation naming it under two statuses
// keeps a struct per status. The generated package serves and reads it
// back (sharedRespTest), and returning it from an operation that does not
// declare it is still a compile error, naming the operation's marker.
func TestSharedResponses(t *testing.T) {
	cfg := Config{Spec: "openapi.yaml", SpecData: []byte(sharedRespSpec), Package: "api", Output: "out", Client: ClientConfig{Enabled: true}}
	spec, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := spec.Model
	var got []string
	for _, s := range m.SharedResponses {
		got = append(got, s.TypeName+" "+s.Location+" "+strings.Repeat("+", s.Uses))
	}
	want := []string{"NotFoundResponse #/components/responses/NotFound ++", "ProblemResponse #/components/responses/Problem +++"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("shared responses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	shared := map[string]string{}
	for _, o := range m.Operations {
		for _, r := range o.Responses {
			if r.Shared != nil {
				shared[r.TypeName] = r.Shared.TypeName
			} else {
				shared[r.TypeName] = ""
			}
		}
	}
	for name, of := range map[string]string{
		"CreateNote404Response": "NotFoundResponse", "GetNote404Response": "NotFoundResponse",
		"DeleteNote404Response": "", "DeleteNote410Response": "", // two statuses of one operation
		"CreateNoteDefaultResponse": "ProblemResponse", "DeleteNoteDefaultResponse": "ProblemResponse",
		"GetNote200Response": "",
	} {
		if s, ok := shared[name]; !ok || s != of {
			t.Errorf("%s: shared %q (declared %v), want %q", name, s, ok, of)
		}
	}

	// A component named like an operation's response interface leaves the
	// interface its name.
	clash := strings.ReplaceAll(sharedRespSpec, "responses/Problem", "responses/GetNote")
	clash = strings.Replace(clash, "    Problem:", "    GetNote:", 1)
	cspec, err := Load(Config{Spec: "openapi.yaml", SpecData: []byte(clash), Package: "api", Output: "out"})
	if err != nil {
		t.Fatal(err)
	}
	cm := cspec.Model
	names := map[string]string{}
	for _, o := range cm.Operations {
		names[o.ID] = o.ResponseTypeName
	}
	if names["getNote"] != "GetNoteResponse" || len(cm.SharedResponses) != 2 || cm.SharedResponses[0].TypeName != "GetNoteResponse2" {
		t.Errorf("a component named GetNote: getNote's response interface %q, shared %q, want GetNoteResponse and GetNoteResponse2", names["getNote"], cm.SharedResponses[0].TypeName)
	}

	// rename names the shared type and its body by the component's
	// locations.
	rcfg := cfg
	rcfg.Rename = map[string]Rename{
		"#/components/responses/NotFound":                                  {Name: "Missing"},
		"#/components/responses/NotFound/content/application~1json/schema": {Name: "MissingNote"},
	}
	rfiles, _, err := Generate(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"type Missing struct {", "Body    MissingNote", "type GetNote404Response = Missing"} {
		if !containsCode(allSource(rfiles), want) {
			t.Errorf("renamed: generated code lacks %q", want)
		}
	}

	files, _, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := allSource(files)
	for _, want := range []string{
		"type GetNote404Response = NotFoundResponse", "func (NotFoundResponse) isGetNoteResponse() {}",
		"type DeleteNote410Response struct {", "func (DeleteNote410Response) isDeleteNoteResponse() {}",
	} {
		if !containsCode(src, want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
	if testing.Short() {
		return
	}
	dir := modulePackage(t, "sharedresp", append(files, File{Name: "sharedresp_test.go", Content: []byte(sharedRespTest)}))
	moduleResult(t, "sharedresp")

	// The same package with deleteNote answering NotFoundResponse, which
	// it does not share, fails to build (in a directory go test ./...
	// skips, once the run's module has built everything it needs).
	bad := filepath.Join(filepath.Dir(dir), "_sharedresp_wrong")
	if _, err := Write(bad, files); err != nil {
		t.Fatal(err)
	}
	wrong := `package api

import "context"

type wrong struct{ Unimplemented }

func (wrong) DeleteNote(ctx context.Context, req DeleteNoteRequest) (DeleteNoteResponse, error) {
	return NotFoundResponse{}, nil
}
`
	if err := os.WriteFile(filepath.Join(bad, "wrong.go"), []byte(wrong), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := goCommand(filepath.Dir(bad), "build", "./"+filepath.Base(bad)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "isDeleteNoteResponse") {
		t.Errorf("deleteNote returning NotFoundResponse: go build %v, want a compile error naming isDeleteNoteResponse:\n%s", err, out)
	}
}
