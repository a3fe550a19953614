package generator

import (
	"strings"
	"testing"
)

// shareSpec repeats inline schemas the way Stripe does: the same address
// and kind in a form body and in JSON bodies, and near copies that differ in
// one thing the generated code depends on. No root x-idempotent: the POSTs
// are plain handlers, driven without a database.
const shareSpec = `openapi: 3.0.3
info: {title: share, version: '1'}
paths:
  /customers:
    get:
      operationId: listCustomers
      parameters:
        - {name: kind, in: query, schema: {type: string, enum: [person, company]}}
      responses: {'200': {description: ok}}
    post:
      operationId: createCustomer
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              properties:
                address: {type: object, required: [line1], properties: {line1: {type: string, maxLength: 5}, city: {type: string}, tags: {type: array, items: {type: string}}}}
                kind: {type: string, enum: [person, company]}
                expand: {type: array, items: {type: string}}
      responses: {'200': {description: ok}}
  /accounts:
    post:
      operationId: createAccount
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties:
                # The Go type of customers' address; line1 allows 10 characters here (validated per location).
                address: {type: object, required: [line1], properties: {line1: {type: string, maxLength: 10}, city: {type: string}, tags: {type: array, items: {type: string}}}}
                kind: {type: string, enum: [person, company]}
                billing:
                  type: object
                  properties:
                    address: {type: object, required: [line1], properties: {line1: {type: string}, city: {type: string}, tags: {type: array, items: {type: string}}}}
      responses: {'200': {description: ok}}
  /orders:
    post:
      operationId: createOrder
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                address: {type: object, required: [line1, tags], properties: {line1: {type: string}, city: {type: string}, tags: {type: array, items: {type: string}}}}
                billing:
                  type: object
                  properties:
                    address: {type: object, required: [line1], properties: {line1: {type: string}, city: {type: string, readOnly: true}, tags: {type: array, items: {type: string}}}}
                shipping:
                  type: object
                  properties:
                    address: {type: object, required: [line1], properties: {line1: {type: string}, city: {type: string, default: Paris}, tags: {type: array, items: {type: string}}}}
                pickup:
                  type: object
                  properties:
                    address: {type: object, required: [line1, tags], properties: {line1: {type: string}, city: {type: string}, tags: {type: array, items: {type: string}, nullable: true}}}
                    kind: {type: string, enum: [person, company, other]}
                from: {type: object, required: [line1], properties: {line1: {type: string}, city: {type: string}, tags: {type: array, items: {type: string}}}}
                gift:
                  type: object
                  properties:
                    address: {type: object, required: [line1], properties: {line1: {type: string}, city: {type: string, description: The city.}, tags: {type: array, items: {type: string}}}}
      responses: {'200': {description: ok}}
  /batches:
    post:
      operationId: createBatch
      requestBody:
        content: {application/json: {schema: {type: array, items: {type: object, properties: {n: {type: integer}}}}}}
      responses: {'200': {description: ok}}
    put:
      operationId: replaceBatch
      requestBody:
        content: {application/json: {schema: {type: array, items: {type: object, properties: {n: {type: integer}}}}}}
      responses: {'200': {description: ok}}
  /imports:
    post:
      operationId: importRows
      requestBody:
        content: {application/json: {schema: {type: array, items: {type: object, properties: {n: {type: integer}}}}}}
      responses: {'200': {description: ok}}
components:
  schemas:
    Address: {type: object, properties: {street: {type: string}}}
`

// shareTest is compiled into the generated package and run: the one
// Address type carries a form body and a JSON body, each validated against
// its own schema.
const shareTest = `package api

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

type srv struct{ Unimplemented }

func (srv) CreateCustomer(ctx context.Context, req CreateCustomerRequest) (CreateCustomerResponse, error) {
	var a *CreateAccountRequestBodyAddress = req.Body.Address // the shared type
	if a == nil || a.Line1 != "12 ab" || a.City == nil || *a.City != "Oslo" || req.Body.Kind == nil || *req.Body.Kind != KindCompany || len(req.Body.Expand) != 2 {
		return nil, errors.New("bad form decode")
	}
	return CreateCustomer200Response{}, nil
}

func (srv) CreateAccount(ctx context.Context, req CreateAccountRequest) (CreateAccountResponse, error) {
	var a *CreateAccountRequestBodyAddress = req.Body.Address
	if a == nil || a.Line1 != "1234567890" || req.Body.Billing == nil || req.Body.Billing.Address == nil || req.Body.Billing.Address.Line1 != "b" {
		return nil, errors.New("bad JSON decode")
	}
	return CreateAccount200Response{}, nil
}

func (srv) ListCustomers(ctx context.Context, req ListCustomersRequest) (ListCustomersResponse, error) {
	if req.Kind == nil || *req.Kind != KindPerson {
		return nil, errors.New("bad query decode")
	}
	return ListCustomers200Response{}, nil
}

func (srv) ReplaceBatch(ctx context.Context, req ReplaceBatchRequest) (ReplaceBatchResponse, error) {
	var items []CreateBatchRequestBodyItem = req.Body
	if len(items) != 1 || items[0].N == nil || *items[0].N != 7 {
		return nil, errors.New("bad batch decode")
	}
	return ReplaceBatch200Response{}, nil
}

func TestSharedTypes(t *testing.T) {
	h := NewHandler(srv{}, nil)
	for _, tc := range []struct {
		path, ct, body string
		status         int
	}{
		{"/customers?kind=person", "", "", 200},
		{"/customers?kind=other", "", "", 400},
		{"/customers", "application/x-www-form-urlencoded", "address[line1]=12+ab&address[city]=Oslo&kind=company&expand[]=a&expand[]=b", 200},
		{"/customers", "application/x-www-form-urlencoded", "address[line1]=1234567&kind=company", 400}, // maxLength 5 here
		{"/customers", "application/x-www-form-urlencoded", "address[city]=Oslo", 400},                   // line1 required
		{"/customers", "application/x-www-form-urlencoded", "kind=other", 400},
		{"/accounts", "application/json", ` + "`" + `{"address":{"line1":"1234567890"},"billing":{"address":{"line1":"b"}}}` + "`" + `, 200}, // maxLength 10 here
		{"/accounts", "application/json", ` + "`" + `{"address":{"line1":"12345678901"}}` + "`" + `, 400},
		{"/accounts", "application/json", ` + "`" + `{"billing":{"address":{"city":"x"}}}` + "`" + `, 400},
		{"/accounts", "application/json", ` + "`" + `{"kind":"other"}` + "`" + `, 400},
		{"PUT /batches", "application/json", ` + "`" + `[{"n":7}]` + "`" + `, 200},
	} {
		rec := httptest.NewRecorder()
		method, path, ok := strings.Cut(tc.path, " ")
		if !ok {
			method, path = "POST", tc.path
		}
		r := httptest.NewRequest(method, path, strings.NewReader(tc.body))
		if tc.ct == "" {
			r = httptest.NewRequest("GET", tc.path, nil)
		}
		r.Header.Set("Content-Type", tc.ct)
		h.ServeHTTP(rec, r)
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.path, tc.body, rec.Code, body, tc.status)
		}
	}
}
`

// TestShareInline: inline schemas whose Go types are the same in everything
// the generated code depends on are one type, named with the words that end
// all their uses' names, or after the first use when another identifier has
// that name; a difference in required, readOnly, a default, nullable, a
// description or an enum value keeps them apart, and so does a rename.
func TestShareInline(t *testing.T) {
	const body = "#/paths/~1%s/post/requestBody/content/application~1json/schema/properties/"
	form := "#/paths/~1customers/post/requestBody/content/application~1x-www-form-urlencoded/schema/properties/"
	accounts, orders := strings.ReplaceAll(body, "%s", "accounts"), strings.ReplaceAll(body, "%s", "orders")
	typeAt := func(t *testing.T, m *Model) map[string]string {
		out := map[string]string{}
		var walk func(loc string, gt GoType)
		walk = func(loc string, gt GoType) {
			switch gt.Kind {
			case GoNamed:
				out[loc] = gt.Named.Name
			case GoPointer, GoSlice, GoNullable, GoOrEmpty:
				walk(loc, *gt.Elem)
			}
		}
		for _, ty := range m.Types {
			for _, f := range ty.Fields {
				walk(f.Location, f.Type)
			}
		}
		for _, o := range m.Operations {
			if o.Body != nil {
				walk(o.Location+"/requestBody/content/application~1json/schema/items", o.Body.Type)
			}
			for _, p := range o.Params {
				walk(o.Location+"/parameters/"+p.In+"/"+p.Name+"/schema", p.Type)
			}
		}
		return out
	}
	build := func(t *testing.T, rename map[string]Rename) (*Model, []File, []Warning) {
		cfg := Config{Spec: "openapi.yaml", SpecData: []byte(shareSpec), Package: "api", Output: "out", Rename: rename}
		files, warnings, err := Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := spec.Model
		return m, files, warnings
	}

	m, files, warnings := build(t, nil)
	for _, w := range warnings {
		if strings.Contains(w.Message, "Go identifier") {
			t.Errorf("warning: %s", w)
		}
	}
	got := typeAt(t, m)
	shared := "CreateAccountRequestBodyAddress" // "Address" is the component's
	for loc, want := range map[string]string{
		form + "address":                        shared,
		accounts + "address":                    shared,
		accounts + "billing/properties/address": shared,
		form + "kind":                           "Kind",
		accounts + "kind":                       "Kind",
		"#/paths/~1customers/get/parameters/query/kind/schema": "Kind",
		orders + "address":                                                          "CreateOrderRequestBodyAddress",         // tags required
		orders + "billing/properties/address":                                       "CreateOrderRequestBodyBillingAddress",  // city readOnly
		orders + "shipping/properties/address":                                      "CreateOrderRequestBodyShippingAddress", // city has a default
		orders + "pickup/properties/address":                                        "CreateOrderRequestBodyPickupAddress",   // tags required and nullable
		orders + "pickup/properties/kind":                                           "CreateOrderRequestBodyPickupKind",      // one more value
		"#/paths/~1imports/post/requestBody/content/application~1json/schema/items": "CreateBatchRequestBodyItem",            // RequestBodyItem: only words idemgen adds
		orders + "from":                                                             "CreateOrderRequestBodyFrom",            // another property
		orders + "gift/properties/address":                                          "CreateOrderRequestBodyGiftAddress",     // city described
	} {
		if got[loc] != want {
			t.Errorf("%s: type %q, want %q", loc, got[loc], want)
		}
	}
	src := allSource(files)
	for _, want := range []string{
		"// CreateAccountRequestBodyAddress is generated from " + accounts + "address and 2 other inline schemas of the same shape.",
		"// Kind is generated from " + accounts + "kind and 2 other inline schemas of the same shape.",
		`KindPerson Kind = "person"`,
	} {
		if !containsCode(src, want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
	for _, gone := range []string{"type CreateCustomerRequestBodyAddress ", "type CreateAccountRequestBodyBillingAddress ", "type CreateCustomerRequestBodyKind "} {
		if strings.Contains(src, gone) {
			t.Errorf("generated code has %q", gone)
		}
	}

	// A rename names one schema alone: it is not shared.
	m, _, _ = build(t, map[string]Rename{form + "kind": {Type: "CustomerKind"}})
	got = typeAt(t, m)
	if got[form+"kind"] != "CustomerKind" || got[accounts+"kind"] != "Kind" {
		t.Errorf("renamed: kinds %q and %q, want CustomerKind and Kind", got[form+"kind"], got[accounts+"kind"])
	}

	if testing.Short() {
		return
	}
	files = append(files, File{Name: "share_test.go", Content: []byte(shareTest)})
	modulePackage(t, "share", files)
	moduleResult(t, "share")
}
