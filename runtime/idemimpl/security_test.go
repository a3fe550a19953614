package idemimpl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// The generated servers' behaviour is tested over HTTP and PostgreSQL by
// generator.TestSecurityHooks; these are the cases no spec there reaches.

var (
	bearerScheme = &Scheme{Name: "bearer", Kind: SchemeBearer, Challenge: "Bearer"}
	keyScheme    = &Scheme{Name: "key", Kind: SchemeAPIKeyHeader, Param: "X-Key"}
	digestScheme = &Scheme{Name: "digest", Kind: SchemeHTTP, Param: "Digest"}
	tlsScheme    = &Scheme{Name: "mtls", Kind: SchemeMutualTLS}
)

func authenticate(t *testing.T, r *http.Request, alts []Requirement, hook HookFunc) (*httptest.ResponseRecorder, *http.Request) {
	t.Helper()
	w := httptest.NewRecorder()
	out, err := Authenticate(w, r, alts, hook)
	if out == nil {
		t.Fatalf("Authenticate returned no request (error %v)", err)
	}
	if err != nil {
		// What the generated handler does with a refusal.
		var e *idem.Engine
		e.WriteError(w, r, idem.ProfileDefault, err)
		return w, nil
	}
	return w, out
}

func problemOf(t *testing.T, w *httptest.ResponseRecorder) idemproblem.Problem {
	t.Helper()
	var p idemproblem.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	return p
}

// A hook's *idemproblem.Problem is the answer, whatever its status.
func TestAuthenticateHookProblem(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("X-Key", "k")
	hook := func(context.Context, *Scheme, *Credential, []string) (any, error) {
		return nil, &idemproblem.Problem{Status: 429, Code: "ERR429_TOO_MANY", Reason: "SLOW_DOWN", Detail: "too many attempts"}
	}
	w, _ := authenticate(t, r, []Requirement{{{Scheme: keyScheme}}}, hook)
	if p := problemOf(t, w); w.Code != 429 || p.Reason != "SLOW_DOWN" {
		t.Errorf("%d %s; want the hook's 429", w.Code, w.Body)
	}
}

// The hooks of one alternative run in order, each seeing the principal so
// far; the last non-nil principal is the request's.
func TestAuthenticateAndChainsPrincipals(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("X-Key", "app-1")
	r.Header.Set("Authorization", "Bearer user-7")
	var seen []any
	hook := func(ctx context.Context, s *Scheme, c *Credential, _ []string) (any, error) {
		p, _ := idem.PrincipalFromContext(ctx)
		seen = append(seen, p)
		return s.Name + "=" + c.Value, nil
	}
	_, out := authenticate(t, r, []Requirement{{{Scheme: keyScheme}, {Scheme: bearerScheme}}}, hook)
	if out == nil {
		t.Fatal("refused")
	}
	if p, _ := idem.PrincipalFromContext(out.Context()); p != "bearer=user-7" {
		t.Errorf("principal %v; want the last hook's", p)
	}
	if !slices.Equal(seen, []any{nil, "key=app-1"}) {
		t.Errorf("hooks saw %v; want nothing, then the key's principal", seen)
	}
}

// Another HTTP scheme gets the credentials after its name; mutual TLS the
// peer's chain; a request without them is a 401 without a hook call.
func TestAuthenticateOtherSchemes(t *testing.T) {
	cert := &x509.Certificate{Raw: []byte{1}}
	var got []string
	hook := func(_ context.Context, s *Scheme, c *Credential, _ []string) (any, error) {
		switch s {
		case digestScheme:
			got = append(got, "digest "+c.Value)
		case tlsScheme:
			if len(c.Certificates) != 1 || c.Certificates[0] != cert {
				return nil, errors.New("wrong chain")
			}
			got = append(got, "mtls")
		}
		return s.Name, nil
	}
	alts := []Requirement{{{Scheme: digestScheme}}, {{Scheme: tlsScheme}}}

	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", `digest username="a", response="b"`)
	if _, out := authenticate(t, r, alts, hook); out == nil {
		t.Error("digest refused")
	}
	r = httptest.NewRequest("POST", "/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	if _, out := authenticate(t, r, alts, hook); out == nil {
		t.Error("mutual TLS refused")
	}
	w, out := authenticate(t, httptest.NewRequest("POST", "/", nil), alts, hook)
	if out != nil || w.Code != 401 {
		t.Errorf("no credentials: %d", w.Code)
	}
	if want := []string{`digest username="a", response="b"`, "mtls"}; !slices.Equal(got, want) {
		t.Errorf("hooks got %q; want %q", got, want)
	}
}

// An alternative that holds wins over one whose hook refused, and a 403 of
// one alternative wins over a 401 of another.
func TestAuthenticateAlternatives(t *testing.T) {
	hook := func(_ context.Context, s *Scheme, c *Credential, _ []string) (any, error) {
		switch c.Value {
		case "good":
			return s.Name, nil
		case "forbidden":
			return nil, idem.ErrForbidden
		}
		return nil, errors.New("bad")
	}
	alts := []Requirement{{{Scheme: keyScheme}}, {{Scheme: bearerScheme, Scopes: []string{"a", "b"}}}}
	for _, tc := range []struct {
		key, token string
		status     int
		challenge  []string
	}{
		{"bad", "good", 0, nil},
		{"good", "bad", 0, nil},
		{"bad", "forbidden", 403, []string{`Bearer error="insufficient_scope", scope="a b"`}},
		{"forbidden", "bad", 403, nil},
		{"bad", "bad", 401, []string{`Bearer error="invalid_token"`}},
		{"", "", 401, []string{"Bearer"}},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		if tc.key != "" {
			r.Header.Set("X-Key", tc.key)
		}
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w, out := authenticate(t, r, alts, hook)
		status := 0
		if out == nil {
			status = w.Code
		}
		if status != tc.status || !slices.Equal(w.Header().Values("WWW-Authenticate"), tc.challenge) {
			t.Errorf("key %q token %q: %d %q; want %d %q", tc.key, tc.token, status, w.Header().Values("WWW-Authenticate"), tc.status, tc.challenge)
		}
	}
}
