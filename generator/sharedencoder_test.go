package generator

import (
	"strings"
	"testing"
)

// sharedEncoderSpec: archiveNote and restoreNote answer with the same
// shared responses under the same statuses (NotFound as 404, Problem as
// default), purgeNote with NotFound as 410, and pinNote with a response of
// its own beside them.
const sharedEncoderSpec = `openapi: 3.0.3
info: {title: notes, version: '1'}
paths:
  /notes/{id}/archive:
    post:
      operationId: archiveNote
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '404': {$ref: '#/components/responses/NotFound'}
        default: {$ref: '#/components/responses/Problem'}
  /notes/{id}/restore:
    post:
      operationId: restoreNote
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '404': {$ref: '#/components/responses/NotFound'}
        default: {$ref: '#/components/responses/Problem'}
  /notes/{id}/purge:
    post:
      operationId: purgeNote
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '410': {$ref: '#/components/responses/NotFound'}
        default: {$ref: '#/components/responses/Problem'}
  /notes/{id}/pin:
    post:
      operationId: pinNote
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200': {description: pinned}
        '404': {$ref: '#/components/responses/NotFound'}
        default: {$ref: '#/components/responses/Problem'}
components:
  responses:
    NotFound:
      description: No such note.
      headers:
        X-Reason: {schema: {type: string}}
      content:
        application/json:
          schema: {type: object, properties: {note: {type: integer}}}
    Problem:
      description: Something went wrong.
      content:
        application/json:
          schema: {type: object, properties: {title: {type: string}}}
`

// sharedEncoderTest is compiled into the generated package and run: each
// operation's answers come out under its own statuses, through the shared
// encoder or its own.
const sharedEncoderTest = `package api

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
)

type srv struct{}

func notFound(id int64) NotFoundResponse {
	return NotFoundResponse{Body: NotFoundResponseBody{Note: &id}, XReason: "gone"}
}

func problem() ProblemResponse {
	title := "busy"
	return ProblemResponse{Status: 503, Body: ProblemResponseBody{Title: &title}}
}

func (srv) ArchiveNote(ctx context.Context, req ArchiveNoteRequest) (ArchiveNoteResponse, error) {
	if req.ID == 0 {
		return nil, nil
	}
	if req.ID%2 == 0 {
		return notFound(req.ID), nil
	}
	return problem(), nil
}

func (srv) RestoreNote(ctx context.Context, req RestoreNoteRequest) (RestoreNoteResponse, error) {
	if req.ID%2 == 0 {
		return notFound(req.ID), nil
	}
	return problem(), nil
}

func (srv) PurgeNote(ctx context.Context, req PurgeNoteRequest) (PurgeNoteResponse, error) {
	if req.ID%2 == 0 {
		return notFound(req.ID), nil
	}
	return problem(), nil
}

func (srv) PinNote(ctx context.Context, req PinNoteRequest) (PinNoteResponse, error) {
	if req.ID == 1 {
		return PinNote200Response{}, nil
	}
	return notFound(req.ID), nil
}

func TestSharedEncoder(t *testing.T) {
	h := NewHandler(srv{}, nil)
	for _, tc := range []struct {
		path   string
		status int
		reason string
		body   string
	}{
		{"/notes/2/archive", 404, "gone", ` + "`" + `{"note":2}` + "`" + `},
		{"/notes/3/archive", 503, "", ` + "`" + `{"title":"busy"}` + "`" + `},
		{"/notes/4/restore", 404, "gone", ` + "`" + `{"note":4}` + "`" + `},
		{"/notes/5/restore", 503, "", ` + "`" + `{"title":"busy"}` + "`" + `},
		{"/notes/6/purge", 410, "gone", ` + "`" + `{"note":6}` + "`" + `},
		{"/notes/7/purge", 503, "", ` + "`" + `{"title":"busy"}` + "`" + `},
		{"/notes/1/pin", 200, "", ""},
		{"/notes/8/pin", 404, "gone", ` + "`" + `{"note":8}` + "`" + `},
		{"/notes/0/archive", 500, "", ""}, // a nil response
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", tc.path, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != tc.status || rec.Header().Get("X-Reason") != tc.reason || tc.body != "" && string(body) != tc.body+"\n" && string(body) != tc.body {
			t.Errorf("POST %s: %d X-Reason %q %s; want %d X-Reason %q %s", tc.path, rec.Code, rec.Header().Get("X-Reason"), body, tc.status, tc.reason, tc.body)
		}
	}

	s := httptest.NewServer(h)
	defer s.Close()
	c, err := NewClient(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := c.RestoreNote(context.Background(), RestoreNoteRequest{ID: 4})
	if err != nil {
		t.Fatal(err)
	}
	if nf, ok := restored.Response.(RestoreNote404Response); !ok || nf.Body.Note == nil || *nf.Body.Note != 4 || nf.XReason != "gone" {
		t.Errorf("restoreNote 404: %#v", restored.Response)
	}
	purged, err := c.PurgeNote(context.Background(), PurgeNoteRequest{ID: 7})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := purged.Response.(ProblemResponse); !ok || p.Status != 503 {
		t.Errorf("purgeNote default: %#v", purged.Response)
	}
}
`

// TestSharedEncoder: operations that answer with the same shared responses
// under the same statuses share the first one's response interface (an
// alias) and encoder; an operation answering with them under another
// status, or with a response of its own, keeps its own. The generated
// package answers each operation under its own statuses, and the client
// reads them back.
func TestSharedEncoder(t *testing.T) {
	cfg := Config{Spec: "openapi.yaml", SpecData: []byte(sharedEncoderSpec), Package: "api", Output: "out", Client: ClientConfig{Enabled: true}}
	spec, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]string{}
	for _, o := range spec.Model.Operations {
		by := ""
		if o.ResponsesOf != nil {
			by = o.ResponsesOf.ID
		}
		var shares []string
		for _, s := range o.ResponsesFor {
			shares = append(shares, s.ID)
		}
		ops[o.ID] = o.Encoder() + " by " + by + " shares " + strings.Join(shares, ",")
	}
	for id, want := range map[string]string{
		"archiveNote": "encodeArchiveNoteResponse by  shares restoreNote",
		"restoreNote": "encodeArchiveNoteResponse by archiveNote shares ",
		"purgeNote":   "encodePurgeNoteResponse by  shares ", // NotFound as 410
		"pinNote":     "encodePinNoteResponse by  shares ",   // a response of its own
	} {
		if ops[id] != want {
			t.Errorf("%s: %s, want %s", id, ops[id], want)
		}
	}

	files, _, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := allSource(files)
	for _, want := range []string{
		"type RestoreNoteResponse = ArchiveNoteResponse",
		"func (NotFoundResponse) isArchiveNoteResponse() {}",
		"func (NotFoundResponse) isPurgeNoteResponse() {}",
		"func encodeArchiveNoteResponse(resp ArchiveNoteResponse) (*idem.Response, error) {",
		"func encodePurgeNoteResponse(resp PurgeNoteResponse) (*idem.Response, error) {",
		"out, err := encodeArchiveNoteResponse(resp)",
	} {
		if !containsCode(src, want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
	for _, unwanted := range []string{"func encodeRestoreNoteResponse", "isRestoreNoteResponse", "type RestoreNoteResponse interface"} {
		if strings.Contains(src, unwanted) {
			t.Errorf("restoreNote declares responses of its own: %q", unwanted)
		}
	}
	if testing.Short() {
		return
	}
	modulePackage(t, "sharedencoder", append(files, File{Name: "sharedencoder_test.go", Content: []byte(sharedEncoderTest)}))
	moduleResult(t, "sharedencoder")
}
