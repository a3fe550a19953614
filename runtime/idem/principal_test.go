package idem

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

type testUser struct{ org string }

func TestPrincipalScope(t *testing.T) {
	scope := PrincipalScope(func(u *testUser) string { return u.org })
	r := httptest.NewRequest("POST", "/", nil)
	if tenant, err := scope(r); tenant != "" || err != nil {
		t.Errorf("anonymous: %q, %v; want the empty tenant", tenant, err)
	}
	if tenant, err := scope(r.WithContext(WithPrincipal(context.Background(), &testUser{org: "acme"}))); tenant != "acme" || err != nil {
		t.Errorf("acme: %q, %v", tenant, err)
	}
	for _, p := range []any{&testUser{}, "a string", nil} {
		_, err := scope(r.WithContext(WithPrincipal(context.Background(), p)))
		var pr *idemproblem.Problem
		if !errors.As(err, &pr) || pr.Status != 500 {
			t.Errorf("principal %#v: %v; want a 500 problem", p, err)
		}
	}
}

func TestPrincipalAs(t *testing.T) {
	ctx := WithPrincipal(context.Background(), &testUser{org: "acme"})
	if u, ok := PrincipalAs[*testUser](ctx); !ok || u.org != "acme" {
		t.Errorf("PrincipalAs: %v %v", u, ok)
	}
	if _, ok := PrincipalAs[string](ctx); ok {
		t.Error("PrincipalAs[string] of a *testUser: ok")
	}
	if _, ok := PrincipalFromContext(context.Background()); ok {
		t.Error("PrincipalFromContext of a bare context: ok")
	}
	if p, ok := PrincipalFromContext(WithPrincipal(context.Background(), nil)); !ok || p != nil {
		t.Errorf("a nil principal: %v %v; want authenticated without a value", p, ok)
	}
}

func TestForbiddenProblem(t *testing.T) {
	p := ProblemFor(errors.Join(errors.New("scope"), ErrForbidden), ProfileDefault)
	if p.Status != 403 || p.Code != idemproblem.CodeForbidden || p.Reason != idemproblem.ReasonForbidden {
		t.Errorf("%+v", p)
	}
}
