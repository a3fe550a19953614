package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// apiError is a service's own error shape, as a spec might declare it.
type apiError struct {
	Kind    string       `json:"kind"`
	Message string       `json:"message"`
	Fields  []fieldError `json:"fields,omitempty"`
	Retry   bool         `json:"retry"`
}

type fieldError struct{ Pointer, Rule string }

// apiErrors is the custom mapping docs/errors.md shows: the problem's
// members moved into the service's shape.
func apiErrors(r *http.Request, p *idemproblem.Problem) *idem.Response {
	if p.Reason == idemproblem.ReasonForbidden {
		return nil // the profile's body
	}
	e := apiError{Kind: strings.ToLower(p.Reason), Message: p.Detail, Retry: p.Retryable}
	for _, v := range p.Errors {
		e.Fields = append(e.Fields, fieldError{Pointer: v.Pointer, Rule: v.Rule})
	}
	return idem.JSONError(p, e)
}

// TestErrorMapper: with Config.Errors, every refusal of the engine, and
// every error generated code answers with Engine.WriteError, is in the
// service's shape, with the profile's status and Retry-After.
func TestErrorMapper(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var hooked []error
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{Errors: apiErrors, Hooks: idem.Hooks{
		OnError: func(_ context.Context, op *idem.Operation, err error) {
			mu.Lock()
			defer mu.Unlock()
			hooked = append(hooked, fmt.Errorf("%v: %w", op != nil, err))
		},
	}})
	want := func(r result, status int, kind string, retry bool) apiError {
		t.Helper()
		var got apiError
		if ct := r.Header.Get("Content-Type"); ct != "application/json" || json.Unmarshal(r.Body, &got) != nil {
			t.Fatalf("%d %s %s: want the service's error shape", r.Status, ct, r.Body)
		}
		if r.Status != status || got.Kind != kind || got.Retry != retry || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("got %d %s (Cache-Control %q), want %d kind %s retry %v", r.Status, r.Body, r.Header.Get("Cache-Control"), status, kind, retry)
		}
		return got
	}

	want(e.post("", payReq{Amount: 1}), 400, "idempotency_key_required", false)
	want(e.post("not-a-uuid", payReq{Amount: 1}), 400, "idempotency_key_malformed", false)
	got := want(e.post(newKey(), payReq{Amount: 1, Behave: "invalid"}), 400, "request_invalid", false)
	if !slices.Equal(got.Fields, []fieldError{{"#/metadata/order~1id", "required"}, {"#/note", "maxLength"}}) {
		t.Errorf("violations: %+v", got.Fields)
	}
	key := newKey()
	if r := e.post(key, payReq{Amount: 1}); r.Status != 201 {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
	want(e.post(key, payReq{Amount: 2}), 409, "conflicting_idempotent_request", false)

	// In flight: the profile's Retry-After is added to the mapper's answer.
	key = newKey()
	first := e.async(key, payReq{Amount: 1, Behave: "block"})
	waitStarted(t, e)
	r := e.post(key, payReq{Amount: 1, Behave: "block"})
	want(r, 409, "idempotent_request_in_progress", true)
	if r.Header.Get("Retry-After") != "1" {
		t.Errorf("in flight: Retry-After %q, want 1", r.Header.Get("Retry-After"))
	}
	e.release <- struct{}{}
	if r := recv(t, first); r.Status != 201 {
		t.Fatalf("blocked first: %d %s", r.Status, r.Body)
	}

	// A failing handler: 500, retryable (its key is FAILED_RETRYABLE),
	// the cause to OnError and not to the client.
	r = e.post(newKey(), payReq{Amount: 1, Behave: "error"})
	if want(r, 500, "internal_error", true); strings.Contains(string(r.Body), "secret") {
		t.Errorf("500 leaks the cause: %s", r.Body)
	}

	// Outside Serve (generated code's refusals): the same mapper.
	rec := httptest.NewRecorder()
	e.eng.WriteError(rec, httptest.NewRequest("GET", "/payments?limit=x", nil), idem.ProfileDefault,
		idem.InvalidRequest(`query parameter "limit"`, errors.New("not a number")))
	want(result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}, 400, "request_invalid", false)
	rec = httptest.NewRecorder()
	e.eng.WriteError(rec, httptest.NewRequest("GET", "/payments/1", nil), idem.ProfileDefault, idem.ErrNotImplemented)
	want(result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}, 501, "not_implemented", false)
	rec = httptest.NewRecorder()
	e.eng.WriteError(rec, httptest.NewRequest("GET", "/payments", nil), idem.ProfileDefault, errors.New("list: secret"))
	want(result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}, 500, "internal_error", true)

	// A mapper that returns nil leaves the refusal to the profile.
	rec = httptest.NewRecorder()
	e.eng.WriteError(rec, httptest.NewRequest("GET", "/", nil), idem.ProfileDefault, idem.ErrForbidden)
	result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}.wantProblem(t, 403, idemproblem.CodeForbidden, idemproblem.ReasonForbidden)

	mu.Lock()
	defer mu.Unlock()
	if len(hooked) != 2 || hooked[0].Error() != "true: secret database detail" || hooked[1].Error() != "false: list: secret" {
		t.Errorf("OnError saw %v; want the handler's error (with its operation) and WriteError's (without)", hooked)
	}
}

// TestErrorBodies: what ErrorBody says of each profile's body, which idemgen
// checks declared error schemas against, is what the refusals hold: every
// member written is listed with its JSON type (and one of its values),
// every member listed as always written is there, every status is listed.
func TestErrorBodies(t *testing.T) {
	t.Parallel()
	samples := []error{
		idem.ErrKeyRequired, idem.ErrKeyMalformed, idem.ErrFingerprintMismatch, idem.ErrInFlight,
		idem.ErrSchemaChanged, idem.ErrExpired, idem.ErrLeaseLost, idem.ErrOutcomeUnknown, idem.ErrBodyTooLarge,
		idem.ErrBodyUnreadable, idem.ErrUnauthenticated, idem.ErrForbidden, idem.ErrUnsupportedMediaType,
		idem.ErrNotImplemented, idem.InvalidRequest("body", errors.New("bad")), errors.New("internal"),
		&idemproblem.ValidationError{Violations: []idemproblem.Violation{
			{In: "query", Parameter: "expand", Pointer: "#/0", Rule: "type", Detail: "must be a string"},
			{In: "body", Pointer: "#/metadata/a", Rule: "required", Detail: "is required"},
		}},
		&idemproblem.Problem{Status: 402, Code: "ERR402_PAYMENT_REQUIRED", Reason: "CARD_DECLINED", Detail: "declined", Instance: "/payments/1"},
		&idemproblem.Problem{Status: 429, Detail: "slow down"},
	}
	for _, profile := range idem.PolicyEnums()["profile"] {
		body := idem.Profile(profile).ErrorBody()
		members := map[string]idemproblem.ErrorMember{}
		for _, m := range body.Members {
			members[m.Pointer] = m
		}
		for _, err := range samples {
			rec := httptest.NewRecorder()
			var e *idem.Engine
			e.WriteError(rec, httptest.NewRequest("POST", "/", nil), idem.Profile(profile), err)
			where := fmt.Sprintf("profile %s, %v", profile, err)
			if ct := rec.Header().Get("Content-Type"); ct != body.MediaType {
				t.Errorf("%s: Content-Type %q, want %q", where, ct, body.MediaType)
			}
			var p *idemproblem.Problem
			if !errors.As(err, &p) && !slices.Contains(body.Statuses, rec.Code) {
				t.Errorf("%s: status %d is not one of %v", where, rec.Code, body.Statuses)
			}
			var doc map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatalf("%s: %s: %v", where, rec.Body, err)
			}
			seen := map[string]bool{}
			flatten("", doc, func(ptr, typ string, v any) {
				seen[ptr] = true
				m, ok := members[ptr]
				switch {
				case !ok:
					t.Errorf("%s: %s is not a member ErrorBody lists (%s)", where, ptr, rec.Body)
				case m.Type != typ:
					t.Errorf("%s: %s is %s %s, ErrorBody says %s", where, ptr, typ, rec.Body, m.Type)
				case m.Values != nil && !slices.Contains(m.Values, fmt.Sprint(v)):
					t.Errorf("%s: %s is %v, not one of %v", where, ptr, v, m.Values)
				}
			})
			for _, m := range body.Members {
				if m.Always && !seen[m.Pointer] {
					t.Errorf("%s: %s missing from %s, ErrorBody says it is always there", where, m.Pointer, rec.Body)
				}
			}
			// ReadError reads the refusal back.
			want := idem.ProblemFor(err, idem.Profile(profile))
			if want.Reason == idemproblem.ReasonLeaseLost && profile == string(idem.ProfileStripe) {
				want.Reason = idemproblem.ReasonInProgress // both are lock_timeout
			}
			got, ok := idem.Profile(profile).ReadError(rec.Code, rec.Header(), rec.Body.Bytes())
			if !ok || got.Status != want.Status || got.Reason != want.Reason || (profile != string(idem.ProfileStripe) && got.Code != want.Code) {
				t.Errorf("%s: ReadError gives %+v, %v; want status %d, reason %s, code %s", where, got, ok, want.Status, want.Reason, want.Code)
			}
		}
	}
}

// flatten calls f with the pointer and JSON type of every member of doc,
// objects before their members (arrays are not entered).
func flatten(ptr string, doc map[string]any, f func(ptr, typ string, v any)) {
	for k, v := range doc {
		p := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
		switch v := v.(type) {
		case map[string]any:
			f(p, "object", v)
			flatten(p, v, f)
		case []any:
			f(p, "array", v)
		case string:
			f(p, "string", v)
		case float64:
			if v == float64(int64(v)) {
				f(p, "integer", v)
			} else {
				f(p, "number", v)
			}
		case bool:
			f(p, "boolean", v)
		default:
			f(p, "null", v)
		}
	}
}

// refusal is what one refusal must look like under a profile.
type refusal struct {
	status int
	// code and reason of a problem (default, ietf); type, code and param of
	// Stripe's envelope (stripe).
	code, reason, param string
	retryAfter          bool
	shouldRetry         string // Stripe-Should-Retry (stripe)
}

// check compares r with want under profile, and returns Stripe's message.
func (want refusal) check(t *testing.T, profile idem.Profile, what string, r result) string {
	t.Helper()
	if r.Status != want.status || (r.Header.Get("Retry-After") != "") != want.retryAfter ||
		r.Header.Get("Stripe-Should-Retry") != want.shouldRetry || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s, profile %s: %d %v %s; want %d, Retry-After %v, Stripe-Should-Retry %q", what, profile, r.Status, r.Header, r.Body, want.status, want.retryAfter, want.shouldRetry)
		return ""
	}
	if profile != idem.ProfileStripe {
		var p idemproblem.Problem
		if r.Header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(r.Body, &p) != nil ||
			p.Status != want.status || p.Code != want.code || p.Reason != want.reason {
			t.Errorf("%s, profile %s: %s %s; want a problem %s/%s", what, profile, r.Header.Get("Content-Type"), r.Body, want.code, want.reason)
		}
		return ""
	}
	var env struct {
		Error struct{ Type, Code, Message, Param string }
	}
	if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(r.Body, &env) != nil ||
		env.Error.Type != want.reason || env.Error.Code != want.code || env.Error.Param != want.param || env.Error.Message == "" {
		t.Errorf("%s, profile stripe: %s %s; want type %s, code %s, param %q", what, r.Header.Get("Content-Type"), r.Body, want.reason, want.code, want.param)
	}
	return env.Error.Message
}

// TestProfiles drives each refusal over HTTP to PostgreSQL under each
// profile: statuses, bodies and retry signals as docs/errors.md tables
// them. Under stripe a duplicate in flight is 429 lock_timeout with
// Stripe-Should-Retry: true (the one answer Stripe's SDKs retry), and its
// retry gets the first request's response.
func TestProfiles(t *testing.T) {
	t.Parallel()
	const inv, idemErr, apiErr = "invalid_request_error", "idempotency_error", "api_error"
	cases := []struct {
		name string
		want map[idem.Profile]refusal
	}{
		{"key missing", map[idem.Profile]refusal{
			idem.ProfileDefault: {400, idemproblem.CodeMalformedHeader, idemproblem.ReasonKeyRequired, "", false, ""},
			idem.ProfileIETF:    {400, idemproblem.CodeMalformedHeader, idemproblem.ReasonKeyRequired, "", false, ""},
			idem.ProfileStripe:  {400, "idempotency_key_required", inv, "", false, "false"},
		}},
		{"key malformed", map[idem.Profile]refusal{
			idem.ProfileDefault: {400, idemproblem.CodeMalformedHeader, idemproblem.ReasonKeyMalformed, "", false, ""},
			idem.ProfileIETF:    {400, idemproblem.CodeMalformedHeader, idemproblem.ReasonKeyMalformed, "", false, ""},
			idem.ProfileStripe:  {400, "idempotency_key_malformed", inv, "", false, "false"},
		}},
		{"invalid request", map[idem.Profile]refusal{
			idem.ProfileDefault: {400, idemproblem.CodeInvalidRequest, idemproblem.ReasonInvalidRequest, "", false, ""},
			idem.ProfileIETF:    {400, idemproblem.CodeInvalidRequest, idemproblem.ReasonInvalidRequest, "", false, ""},
			idem.ProfileStripe:  {400, "parameter_missing", inv, "metadata[order/id]", false, "false"},
		}},
		{"key reused with another payload", map[idem.Profile]refusal{
			idem.ProfileDefault: {409, idemproblem.CodeConflict, idemproblem.ReasonConflict, "", false, ""},
			idem.ProfileIETF:    {422, idemproblem.CodeUnprocessable, idemproblem.ReasonConflict, "", false, ""},
			idem.ProfileStripe:  {400, "conflicting_idempotent_request", idemErr, "", false, "false"},
		}},
		{"in flight", map[idem.Profile]refusal{
			idem.ProfileDefault: {409, idemproblem.CodeConflict, idemproblem.ReasonInProgress, "", true, ""},
			idem.ProfileIETF:    {409, idemproblem.CodeConflict, idemproblem.ReasonInProgress, "", true, ""},
			idem.ProfileStripe:  {429, "lock_timeout", inv, "", true, "true"},
		}},
		{"handler error", map[idem.Profile]refusal{
			idem.ProfileDefault: {500, idemproblem.CodeInternal, idemproblem.ReasonInternal, "", false, ""},
			idem.ProfileIETF:    {500, idemproblem.CodeInternal, idemproblem.ReasonInternal, "", false, ""},
			idem.ProfileStripe:  {500, "internal_error", apiErr, "", false, "true"},
		}},
		{"not implemented", map[idem.Profile]refusal{
			idem.ProfileDefault: {501, idemproblem.CodeNotImplemented, idemproblem.ReasonNotImplemented, "", false, ""},
			idem.ProfileIETF:    {501, idemproblem.CodeNotImplemented, idemproblem.ReasonNotImplemented, "", false, ""},
			idem.ProfileStripe:  {501, "not_implemented", apiErr, "", false, "false"},
		}},
		{"unauthenticated", map[idem.Profile]refusal{
			idem.ProfileDefault: {401, idemproblem.CodeUnauthorized, idemproblem.ReasonUnauthenticated, "", false, ""},
			idem.ProfileIETF:    {401, idemproblem.CodeUnauthorized, idemproblem.ReasonUnauthenticated, "", false, ""},
			idem.ProfileStripe:  {401, "unauthenticated", inv, "", false, "false"},
		}},
	}
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 32})
	for _, profile := range []idem.Profile{idem.ProfileDefault, idem.ProfileIETF, idem.ProfileStripe} {
		pol := testPolicy(idem.ModeAtomic)
		pol.Profile = profile
		e := newEnvOn(t, db, pol, idem.Config{Scope: func(r *http.Request) (string, error) {
			if r.Header.Get("Authorization") == "none" {
				return "", errors.New("no such API key")
			}
			return string(profile), nil
		}})
		for _, c := range cases {
			want := c.want[profile]
			var r result
			switch c.name {
			case "key missing":
				r = e.post("", payReq{Amount: 1})
			case "key malformed":
				r = e.post("not-a-uuid", payReq{Amount: 1})
			case "invalid request":
				r = e.post(newKey(), payReq{Amount: 1, Behave: "invalid"})
				if msg := want.check(t, profile, c.name, r); profile == idem.ProfileStripe &&
					msg != "metadata[order/id]: is required; note: must be at most 10 characters long" {
					t.Errorf("stripe: message %q does not name every violation", msg)
				}
				continue
			case "key reused with another payload":
				key := newKey()
				if r := e.post(key, payReq{Amount: 1}); r.Status != 201 {
					t.Fatalf("profile %s: first: %d %s", profile, r.Status, r.Body)
				}
				r = e.post(key, payReq{Amount: 2})
			case "in flight":
				key := newKey()
				first := e.async(key, payReq{Amount: 1, Behave: "block"})
				waitStarted(t, e)
				r = e.post(key, payReq{Amount: 1, Behave: "block"})
				e.release <- struct{}{}
				f := recv(t, first)
				// The retry the refusal asks for gets the first's response.
				if again := e.post(key, payReq{Amount: 1, Behave: "block"}); again.Status != 201 ||
					again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(f.Body) {
					t.Errorf("profile %s: the retry after in flight: %d %s, want the replay of %d %s", profile, again.Status, again.Body, f.Status, f.Body)
				}
			case "handler error":
				r = e.post(newKey(), payReq{Amount: 1, Behave: "error"})
			case "not implemented":
				rec := httptest.NewRecorder()
				e.eng.WriteError(rec, httptest.NewRequest("GET", "/accounts/a/payments", nil), profile, idem.ErrNotImplemented)
				r = result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
			case "unauthenticated":
				r = e.post(newKey(), payReq{Amount: 1}, withHeader("Authorization", "none"))
			}
			want.check(t, profile, c.name, r)
		}
	}
}
