package api

// Compiled into the package generated from openapi.yaml beside it and run by
// generator.TestUniqueness: idemgen's conformance checks (what `idemgen
// conformance` runs) against the generated server over real HTTP, with a
// service whose business rules refuse a duplicate email (409) and a note
// for an account that does not exist (404), on a real PostgreSQL.

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/conformance"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

type service struct{ db *pgtest.DB }

func (s service) ListUsers(ctx context.Context, req ListUsersRequest) (ListUsersResponse, error) {
	rows, err := s.db.Query(ctx, "SELECT id, email, name FROM users ORDER BY id")
	if err != nil {
		return nil, err
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (User, error) {
		var u User
		return u, r.Scan(&u.ID, &u.Email, &u.Name)
	})
	if err != nil {
		return nil, err
	}
	return ListUsers200Response{Body: ListUsers200ResponseBody{Items: append([]User{}, users...)}}, nil
}

func (s service) CreateUser(ctx context.Context, tx pgx.Tx, req CreateUserRequest) (CreateUserResponse, error) {
	u := User{Email: req.Body.Email, Name: req.Body.Name}
	err := tx.QueryRow(ctx, "INSERT INTO users (email, name) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING RETURNING id",
		u.Email, u.Name).Scan(&u.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		detail := "an account for " + u.Email + " exists already"
		return CreateUser409Response{Body: Problem{Title: "email taken", Status: 409, Detail: &detail}}, nil
	}
	if err != nil {
		return nil, err
	}
	return CreateUser201Response{Body: u}, nil
}

func (s service) CreateNote(ctx context.Context, tx pgx.Tx, req CreateNoteRequest) (CreateNoteResponse, error) {
	n := Note{UserID: req.UserID, Text: req.Body.Text}
	err := tx.QueryRow(ctx, "INSERT INTO notes (user_id, text) SELECT id, $2 FROM users WHERE id = $1 RETURNING id",
		n.UserID, n.Text).Scan(&n.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return CreateNote404Response{Body: Problem{Title: "no such account", Status: 404}}, nil
	}
	if err != nil {
		return nil, err
	}
	return CreateNote201Response{Body: n}, nil
}

// serve starts the generated server on a fresh schema; notes counts the
// requests that reached POST /users/{userId}/notes.
func serve(t *testing.T) (url string, notes *atomic.Int64) {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{})
	if _, err := db.Exec(context.Background(), `
		CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE, name text NOT NULL);
		CREATE TABLE notes (id bigserial PRIMARY KEY, user_id bigint NOT NULL REFERENCES users, text text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	engine, err := idem.New(db.Pool, idem.Config{Operations: IdempotentOperations})
	if err != nil {
		t.Fatal(err)
	}
	notes = &atomic.Int64{}
	h := NewHandler(service{db}, engine)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/notes") {
			notes.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, notes
}

func run(t *testing.T, cfg conformance.Config) (*conformance.Report, string) {
	t.Helper()
	rep, err := conformance.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	return rep, out.String()
}

// TestConformsWithBodyTemplate: one body template for createUser, whose
// email takes a new value in every request built, and the service
// conforms; only the tenants check, which needs flags, is skipped.
func TestConformsWithBodyTemplate(t *testing.T) {
	url, _ := serve(t)
	rep, out := run(t, conformance.Config{Spec: "testdata/openapi.yaml", URL: url, Concurrency: 5, Bodies: map[string][]byte{
		"createUser": []byte(`{"email": "user-{{seq}}-{{run}}@example.com", "name": "Ann {{uuid}}"}`),
	}})
	t.Logf("\n%s", out)
	if !rep.OK() {
		t.Errorf("the service does not conform:\n%s", out)
	}
	for _, r := range rep.Results {
		if r.Outcome == conformance.Skip && r.Check != "tenants" {
			t.Errorf("%s %s skipped: %s", r.Operation, r.Check, r.Evidence)
		}
	}
	if rep.Passed != 2*13 {
		t.Errorf("%d checks passed, want every check of both operations but tenants (13 each)", rep.Passed)
	}
}

// TestRefusalIsExplained: without the template every request carries the
// same email. The service's 409 and what it said are in the plain-text
// report, and createNote's checks are skipped because its account could
// not be created: no note was requested for an invented account id.
func TestRefusalIsExplained(t *testing.T) {
	url, notes := serve(t)
	rep, out := run(t, conformance.Config{Spec: "testdata/openapi.yaml", URL: url, Concurrency: 3})
	t.Logf("\n%s", out)
	if rep.OK() {
		t.Fatalf("conforms with a body the service refuses:\n%s", out)
	}
	if !strings.Contains(out, "409: an account for") || !strings.Contains(out, "exists already") {
		t.Errorf("the plain-text report does not say why the service refused:\n%s", out)
	}
	r := rep.Find("createNote", "first-execution")
	if r == nil || r.Outcome != conformance.Skip || !strings.Contains(r.Evidence, "prerequisite failed") || !strings.Contains(r.Evidence, "createUser answered 409") {
		t.Errorf("createNote first-execution: %+v", r)
	}
	if r := rep.Find("createNote", "replay"); r == nil || r.Outcome != conformance.Skip {
		t.Errorf("createNote replay: %+v", r)
	}
	if n := notes.Load(); n != 0 {
		t.Errorf("%d requests for notes of an account that was never created", n)
	}
}
