package api

// Compiled into the package generated from openapi.yaml beside it and run by
// generator.TestPathSegments: path segments holding parameters between
// literals, over real HTTP, with the idempotency engine on a real PostgreSQL.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

type service struct {
	Unimplemented
	merges atomic.Int64
}

func (s *service) CompareCommits(ctx context.Context, req CompareCommitsRequest) (CompareCommitsResponse, error) {
	return CompareCommits200Response{Body: Comparison{Owner: req.Owner, Repo: req.Repo, Base: req.Base, Head: req.Head}}, nil
}

func (s *service) MergeRefs(ctx context.Context, tx pgx.Tx, req MergeRefsRequest) (MergeRefsResponse, error) {
	s.merges.Add(1)
	return MergeRefs201Response{Body: Comparison{Owner: req.Owner, Repo: req.Repo, Base: req.Base, Head: req.Head}}, nil
}

func (s *service) GetFileJSON(ctx context.Context, req GetFileJSONRequest) (GetFileJSONResponse, error) {
	return GetFileJSON200Response{Body: File{Operation: "getFileJSON", Name: req.Name}}, nil
}

func (s *service) GetFileGz(ctx context.Context, req GetFileGzRequest) (GetFileGzResponse, error) {
	return GetFileGz200Response{Body: File{Operation: "getFileGz", Name: req.Name}}, nil
}

func (s *service) GetFileTarGz(ctx context.Context, req GetFileTarGzRequest) (GetFileTarGzResponse, error) {
	return GetFileTarGz200Response{Body: File{Operation: "getFileTarGz", Name: req.Name}}, nil
}

func (s *service) GetFile(ctx context.Context, req GetFileRequest) (GetFileResponse, error) {
	return GetFile200Response{Body: File{Operation: "getFile", Name: req.ID}}, nil
}

func (s *service) GetRulesetHistory(ctx context.Context, req GetRulesetHistoryRequest) (GetRulesetHistoryResponse, error) {
	return GetRulesetHistory200Response{Body: File{Operation: "getRulesetHistory", Name: req.Org + "/" + strconv.FormatInt(req.RulesetID, 10)}}, nil
}

func (s *service) GetRuleSuite(ctx context.Context, req GetRuleSuiteRequest) (GetRuleSuiteResponse, error) {
	return GetRuleSuite200Response{Body: File{Operation: "getRuleSuite", Name: req.Org + "/" + req.RuleSuiteID}}, nil
}

func (s *service) CreateVersion(ctx context.Context, tx pgx.Tx, req CreateVersionRequest) (CreateVersionResponse, error) {
	return CreateVersion201Response{Body: Version{Major: req.Major, Minor: req.Minor, Note: req.Body.Note}}, nil
}

type fixture struct {
	t   *testing.T
	url string
	db  *pgtest.DB
	svc *service
}

func start(t *testing.T, handler func(Server, *idem.Engine) http.Handler) *fixture {
	db := pgtest.New(t, pgtest.Options{})
	engine, err := idem.New(db.Pool, idem.Config{Operations: IdempotentOperations})
	if err != nil {
		t.Fatalf("idem.New refuses the generated operations: %v", err)
	}
	svc := &service{}
	srv := httptest.NewServer(handler(svc, engine))
	t.Cleanup(srv.Close)
	return &fixture{t: t, url: srv.URL, db: db, svc: svc}
}

func viaNewHandler(svc Server, engine *idem.Engine) http.Handler { return NewHandler(svc, engine) }

type reply struct {
	status int
	ctype  string
	body   string
	header http.Header
}

func (f *fixture) do(method, path, key, body string) reply {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return reply{status: res.StatusCode, ctype: res.Header.Get("Content-Type"), body: string(b), header: res.Header}
}

func (f *fixture) records() int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM idem_records").Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func decode[T any](t *testing.T, r reply) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("%d %s: %v", r.status, r.body, err)
	}
	return v
}

// notFound checks that a path is answered as one the spec does not declare:
// the same 404 as a path no route matches at all.
func (f *fixture) notFound(method, path, key string) {
	f.t.Helper()
	want := f.do(method, "/nowhere", key, "")
	got := f.do(method, path, key, "")
	if got.status != http.StatusNotFound || got.ctype != want.ctype || got.body != want.body {
		f.t.Errorf("%s %s: %d %s %q, want %d %s %q (an undeclared path)", method, path, got.status, got.ctype, got.body, want.status, want.ctype, want.body)
	}
}

func TestCompareCommits(t *testing.T) {
	f := start(t, viaNewHandler)
	for _, tc := range []struct{ path, base, head string }{
		{"/repos/o/r/compare/main...feature", "main", "feature"},
		{"/repos/o/r/compare/v1.0...v1.1", "v1.0", "v1.1"},
		// The first ... after a non-empty base splits; the head keeps the rest.
		{"/repos/o/r/compare/a...b...c", "a", "b...c"},
		{"/repos/o/r/compare/....b", ".", "b"},
		// Escaped text is split after unescaping, as ServeMux gives it.
		{"/repos/o/r/compare/release%2F1...main", "release/1", "main"},
	} {
		r := f.do("GET", tc.path, "", "")
		if r.status != 200 {
			t.Errorf("GET %s: %d %s", tc.path, r.status, r.body)
			continue
		}
		got := decode[Comparison](t, r)
		want := Comparison{Owner: "o", Repo: "r", Base: tc.base, Head: tc.head}
		if got != want {
			t.Errorf("GET %s: %+v, want %+v", tc.path, got, want)
		}
	}
	for _, p := range []string{
		"/repos/o/r/compare/main..feature", // no ...
		"/repos/o/r/compare/main",
		"/repos/o/r/compare/...feature", // empty base
		"/repos/o/r/compare/main...",    // empty head
		"/repos/o/r/compare/...",
	} {
		f.notFound("GET", p, "")
	}
}

// TestMergeRefsIdempotent: the split parameters reach the fingerprint, and a
// path without the literals leaves no record.
func TestMergeRefsIdempotent(t *testing.T) {
	f := start(t, viaNewHandler)
	first := f.do("POST", "/repos/o/r/merges/main...feature", "k1", "")
	if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
	}
	if got := decode[Comparison](t, first); got != (Comparison{Owner: "o", Repo: "r", Base: "main", Head: "feature"}) {
		t.Errorf("first: %+v", got)
	}
	again := f.do("POST", "/repos/o/r/merges/main...feature", "k1", "")
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || again.body != first.body {
		t.Errorf("retry: %d %v %s", again.status, again.header, again.body)
	}
	// Another head under the same key is another request.
	other := f.do("POST", "/repos/o/r/merges/main...other", "k1", "")
	if other.status != 409 || !strings.Contains(other.body, "CONFLICTING_IDEMPOTENT_REQUEST") {
		t.Errorf("other head, same key: %d %s", other.status, other.body)
	}
	// The same text split elsewhere is another request too.
	moved := f.do("POST", "/repos/o/r/merges/main.....feature", "k1", "")
	if moved.status != 409 {
		t.Errorf("main.....feature, same key: %d %s", moved.status, moved.body)
	}
	if n := f.svc.merges.Load(); n != 1 {
		t.Errorf("%d merges, want 1", n)
	}
	before := f.records()
	f.notFound("POST", "/repos/o/r/merges/main..feature", "k2")
	f.notFound("POST", "/repos/o/r/merges/main...", "k3")
	if n := f.records(); n != before {
		t.Errorf("%d records after the 404s, want %d", n, before)
	}
	if n := f.svc.merges.Load(); n != 1 {
		t.Errorf("%d merges after the 404s, want 1", n)
	}
	// The key is still free for the declared path.
	if r := f.do("POST", "/repos/o/r/merges/a...b", "k2", ""); r.status != 201 {
		t.Errorf("k2 on a declared path: %d %s", r.status, r.body)
	}
}

// TestFilesRoute: four operations share the ServeMux route /files/{...}; the
// most literal text wins.
func TestFilesRoute(t *testing.T) {
	for name, handler := range map[string]func(Server, *idem.Engine) http.Handler{
		"NewHandler": viaNewHandler,
		"Routes": func(svc Server, engine *idem.Engine) http.Handler {
			mux := http.NewServeMux()
			for _, rt := range Routes(svc, engine) {
				mux.Handle(rt.Method+" "+rt.Pattern, rt.Handler)
			}
			return mux
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := start(t, handler)
			for _, tc := range []struct{ path, op, name string }{
				{"/files/report.json", "getFileJSON", "report"},
				{"/files/report.tar.gz", "getFileTarGz", "report"},
				{"/files/report.gz", "getFileGz", "report"},
				{"/files/report", "getFile", "report"},
				{"/files/report.txt", "getFile", "report.txt"},
				{"/files/.json", "getFile", ".json"}, // no name before .json
				{"/files/a.json.gz", "getFileGz", "a.json"},
				{"/files/a.tar.gz.json", "getFileJSON", "a.tar.gz"},
			} {
				r := f.do("GET", tc.path, "", "")
				if r.status != 200 {
					t.Errorf("GET %s: %d %s", tc.path, r.status, r.body)
					continue
				}
				if got := decode[File](t, r); got != (File{Operation: tc.op, Name: tc.name}) {
					t.Errorf("GET %s: %+v, want %s with %q", tc.path, got, tc.op, tc.name)
				}
			}
		})
	}
	var ids []string
	for _, rt := range Routes(&service{}, nil) {
		if strings.HasPrefix(rt.Pattern, "/files/") {
			ids = append(ids, rt.OperationID+" "+rt.Pattern)
		}
	}
	if want := "getFileTarGz,getFileJSON,getFileGz,getFile /files/{id}"; len(ids) != 1 || ids[0] != want {
		t.Errorf("routes under /files/: %q, want [%q]", ids, want)
	}
}

// TestOverlappingRoutes: two operations whose ServeMux patterns overlap
// with neither more specific (ServeMux panics at registration) share one
// route; a literal segment wins over a parameter, from the left.
func TestOverlappingRoutes(t *testing.T) {
	f := start(t, viaNewHandler)
	for _, tc := range []struct{ path, op, name string }{
		{"/orgs/o/rulesets/7/history", "getRulesetHistory", "o/7"},
		{"/orgs/o/rulesets/rule-suites/9", "getRuleSuite", "o/9"},
		{"/orgs/o/rulesets/rule-suites/history", "getRuleSuite", "o/history"},
	} {
		r := f.do("GET", tc.path, "", "")
		if r.status != 200 {
			t.Errorf("GET %s: %d %s", tc.path, r.status, r.body)
			continue
		}
		if got := decode[File](t, r); got != (File{Operation: tc.op, Name: tc.name}) {
			t.Errorf("GET %s: %+v, want %s with %q", tc.path, got, tc.op, tc.name)
		}
	}
	// The shared pattern is wider than either: what neither declares is 404.
	f.notFound("GET", "/orgs/o/rulesets/7/future", "")
	// A ruleset id that is no integer is the parameter's error.
	if r := f.do("GET", "/orgs/o/rulesets/x/history", "", ""); r.status != 400 || r.ctype != "application/problem+json" {
		t.Errorf("GET /orgs/o/rulesets/x/history: %d %s %s", r.status, r.ctype, r.body)
	}
	var got []string
	for _, rt := range Routes(&service{}, nil) {
		if strings.HasPrefix(rt.Pattern, "/orgs/") {
			got = append(got, rt.OperationID+" "+rt.Pattern)
		}
	}
	if want := "getRuleSuite,getRulesetHistory /orgs/{org}/rulesets/{ruleset_id}/{rule_suite_id}"; len(got) != 1 || got[0] != want {
		t.Errorf("routes under /orgs/: %q, want [%q]", got, want)
	}
}

// TestVersions: a prefix literal and typed parameters between literals.
func TestVersions(t *testing.T) {
	f := start(t, viaNewHandler)
	r := f.do("POST", "/versions/v2-13", "k1", `{"note":"n"}`)
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got := decode[Version](t, r); got.Major != 2 || got.Minor != 13 || got.Note == nil || *got.Note != "n" {
		t.Errorf("%+v", got)
	}
	// Split, but not integers or below the minimum: 400 problem+json, no record.
	before := f.records()
	for _, p := range []string{"/versions/vx-1", "/versions/v0-1", "/versions/v1-1-1"} {
		r := f.do("POST", p, "k2", `{}`)
		if r.status != 400 || r.ctype != "application/problem+json" {
			t.Errorf("POST %s: %d %s %s", p, r.status, r.ctype, r.body)
		}
	}
	for _, p := range []string{"/versions/2-13", "/versions/v2", "/versions/v-1", "/versions/v2-"} {
		f.notFound("POST", p, "k3")
	}
	if n := f.records(); n != before {
		t.Errorf("%d records after refused requests, want %d", n, before)
	}
}

// TestClient: the generated client puts the literals back.
func TestClient(t *testing.T) {
	f := start(t, viaNewHandler)
	c, err := NewClient(f.url)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CompareCommits(context.Background(), CompareCommitsRequest{Owner: "o", Repo: "r", Base: "main", Head: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := res.Response.(CompareCommits200Response); !ok || got.Body != (Comparison{Owner: "o", Repo: "r", Base: "main", Head: "dev"}) {
		t.Errorf("%#v", res.Response)
	}
	v, err := c.CreateVersion(context.Background(), CreateVersionRequest{Major: 3, Minor: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := v.Response.(CreateVersion201Response); !ok || got.Body.Major != 3 || got.Body.Minor != 4 {
		t.Errorf("%#v", v.Response)
	}
}
