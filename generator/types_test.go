package generator

import (
	"testing"
)

// typesSpec has a schema of every shape the generated types must carry
// faithfully: unions with and without a discriminator, wrappers, nullable
// and "or empty" members, additionalProperties beside properties, dates,
// readOnly, writeOnly, defaults and typed response headers.
const typesSpec = `openapi: 3.0.3
info: {title: types, version: '1'}
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        '200':
          description: ok
          headers:
            X-Rate-Limit: {required: true, schema: {type: integer}}
            X-Next-Date: {schema: {type: string, format: date}}
            X-Cursor: {schema: {type: string}}
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Pet'}}
  /account:
    get:
      operationId: getAccount
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Account'}}}}
  /listing:
    get:
      operationId: getListing
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Listing'}}}}
components:
  schemas:
    Pet:
      oneOf: [{$ref: '#/components/schemas/Cat'}, {$ref: '#/components/schemas/Dog'}]
      discriminator: {propertyName: petType, mapping: {cat: '#/components/schemas/Cat'}}
    Cat: {type: object, required: [petType], properties: {petType: {type: string}, lives: {type: integer}}}
    Dog: {type: object, required: [petType], properties: {petType: {type: string}, bark: {type: boolean}}}
    Listing:
      oneOf: [{$ref: '#/components/schemas/Dir'}, {$ref: '#/components/schemas/File'}]
      discriminator: {propertyName: type, mapping: {dir: '#/components/schemas/Dir', file: '#/components/schemas/File'}}
    Dir: {type: array, items: {$ref: '#/components/schemas/File'}}
    File: {type: object, required: [type, name], properties: {type: {type: string}, name: {type: string}}}
    ID: {anyOf: [{type: integer}, {type: string}]}
    Mixed: {anyOf: [{enum: [1, a]}, {$ref: '#/components/schemas/Cat'}]}
    Account:
      type: object
      required: [id, owner]
      properties:
        id: {type: string, readOnly: true}
        owner: {anyOf: [{$ref: '#/components/schemas/Owner'}], nullable: true}
        manager: {allOf: [{$ref: '#/components/schemas/Owner'}], nullable: true}
        note: {type: string, nullable: true}
        born: {type: string, format: date}
        metadata:
          anyOf:
            - {type: object, additionalProperties: {type: string}}
            - {type: string, enum: ['']}
        description: {anyOf: [{type: string, maxLength: 10}, {type: string, enum: ['']}]}
        customer: {anyOf: [{type: string}, {$ref: '#/components/schemas/Owner'}]}
        ref: {$ref: '#/components/schemas/ID'}
        password: {type: string, writeOnly: true}
        limit: {type: integer, default: 10}
        kind: {type: string, enum: [personal, business], default: business}
      additionalProperties: {type: integer}
    Owner:
      type: object
      properties:
        name: {type: string}
        secret: {type: string, writeOnly: true}
`

// typesTest is compiled into the generated package and run.
const typesTest = `package api

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idemtype"
)

func TestPetDiscriminator(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{` + "`" + `{"petType":"cat","lives":9}` + "`" + `, "cat"},
		{` + "`" + `{"petType":"Dog","bark":true}` + "`" + `, "dog"},
		{` + "`" + `null` + "`" + `, "none"},
		{` + "`" + `42` + "`" + `, "error"},
		{` + "`" + `"cat"` + "`" + `, "error"},
		{` + "`" + `{"petType":"bird"}` + "`" + `, "error"},
		{` + "`" + `{"petType":"Cat"}` + "`" + `, "error"}, // mapped: only "cat" names Cat
		{` + "`" + `{"lives":1}` + "`" + `, "error"},
		{` + "`" + `{"petType":7}` + "`" + `, "error"},
	} {
		var p Pet
		err := json.Unmarshal([]byte(tc.in), &p)
		got := "none"
		switch {
		case err != nil:
			got = "error"
		case p.Cat != nil && p.Dog == nil:
			got = "cat"
		case p.Dog != nil && p.Cat == nil:
			got = "dog"
		}
		if got != tc.want {
			t.Errorf("%s: got %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
	b, err := json.Marshal(Pet{Cat: &Cat{PetType: "cat", Lives: ptrTo(int64(9))}})
	if err != nil || string(b) != ` + "`" + `{"lives":9,"petType":"cat"}` + "`" + ` {
		t.Errorf("marshal: %s %v", b, err)
	}
}

func TestListingByJSONType(t *testing.T) {
	var l Listing
	if err := json.Unmarshal([]byte(` + "`" + `[{"type":"file","name":"a"}]` + "`" + `), &l); err != nil || l.Dir == nil || len(*l.Dir) != 1 {
		t.Errorf("array: %+v %v", l, err)
	}
	if err := json.Unmarshal([]byte(` + "`" + `{"type":"file","name":"a"}` + "`" + `), &l); err != nil || l.File == nil || l.Dir != nil {
		t.Errorf("object: %+v %v", l, err)
	}
	if err := json.Unmarshal([]byte(` + "`" + `"x"` + "`" + `), &l); err == nil {
		t.Error("a string was accepted")
	}
}

func TestUntaggedUnion(t *testing.T) {
	var id ID
	if err := json.Unmarshal([]byte("12"), &id); err != nil || id.Int64 == nil || *id.Int64 != 12 {
		t.Errorf("12: %+v %v", id, err)
	}
	if err := json.Unmarshal([]byte(` + "`" + `"a"` + "`" + `), &id); err != nil || id.String == nil || id.Int64 != nil {
		t.Errorf("a: %+v %v", id, err)
	}
	if err := json.Unmarshal([]byte("1.5"), &id); err == nil {
		t.Errorf("1.5 was accepted: %+v", id)
	}
	if err := json.Unmarshal([]byte("true"), &id); err == nil {
		t.Errorf("true was accepted: %+v", id)
	}
	// The first member (any Go value) takes only the JSON types it allows.
	var m Mixed
	if err := json.Unmarshal([]byte(` + "`" + `{"petType":"cat"}` + "`" + `), &m); err != nil || m.Cat == nil || m.Variant1 != nil {
		t.Errorf("object: %+v %v", m, err)
	}
	if err := json.Unmarshal([]byte(` + "`" + `"a"` + "`" + `), &m); err != nil || m.Variant1 == nil {
		t.Errorf("a: %+v %v", m, err)
	}
}

func TestAccountRoundTrip(t *testing.T) {
	in := ` + "`" + `{"id":"a1","owner":null,"manager":{"name":"m"},"note":null,"born":"2024-02-29","metadata":"","description":"","customer":"cus_1","ref":"r","kind":"personal","extra":7,"more":8}` + "`" + `
	var a Account
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if a.Owner != nil || !a.Note.IsNull() || a.Born == nil || *a.Born != (idemtype.Date{Year: 2024, Month: time.February, Day: 29}) {
		t.Errorf("owner %v, note %+v, born %v", a.Owner, a.Note, a.Born)
	}
	if m, ok := a.Manager.Value(); !ok || m.Name == nil || *m.Name != "m" {
		t.Errorf("manager %+v", a.Manager)
	}
	if !a.Metadata.IsEmpty() || a.Description == nil || *a.Description != "" {
		t.Errorf("metadata %+v, description %v", a.Metadata, a.Description)
	}
	if a.Customer == nil || a.Customer.String == nil || *a.Customer.String != "cus_1" || a.Ref == nil || a.Ref.String == nil {
		t.Errorf("customer %+v, ref %+v", a.Customer, a.Ref)
	}
	if !reflect.DeepEqual(a.AdditionalProperties, map[string]int64{"extra": 7, "more": 8}) {
		t.Errorf("additional properties %v", a.AdditionalProperties)
	}
	out, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var x, y any
	json.Unmarshal([]byte(in), &x)
	json.Unmarshal(out, &y)
	if !reflect.DeepEqual(x, y) {
		t.Errorf("round trip:\n in  %s\n out %s", in, out)
	}

	// Absent, null and a value stay apart.
	for _, tc := range []struct{ in, want string }{
		{` + "`" + `{"id":"a","owner":{}}` + "`" + `, "absent"},
		{` + "`" + `{"id":"a","owner":{},"note":null}` + "`" + `, "null"},
		{` + "`" + `{"id":"a","owner":{},"note":"n"}` + "`" + `, "n"},
	} {
		var a Account
		if err := json.Unmarshal([]byte(tc.in), &a); err != nil {
			t.Fatal(err)
		}
		got := "absent"
		if a.Note.IsNull() {
			got = "null"
		} else if v, ok := a.Note.Value(); ok {
			got = v
		}
		out, _ := json.Marshal(a)
		if got != tc.want || (tc.want == "absent") == strings.Contains(string(out), "note") || tc.want == "null" && !strings.Contains(string(out), ` + "`" + `"note":null` + "`" + `) {
			t.Errorf("%s: note %s, encoded %s", tc.in, got, out)
		}
	}
	for _, bad := range []string{` + "`" + `{"id":"a"}` + "`" + `, ` + "`" + `{"id":"a","owner":{},"born":"2023-02-29"}` + "`" + `, ` + "`" + `{"id":"a","owner":{},"extra":"x"}` + "`" + `} {
		if err := json.Unmarshal([]byte(bad), new(Account)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
	// readOnly id is not required when decoding (a request carries none).
	if err := json.Unmarshal([]byte(` + "`" + `{"owner":{}}` + "`" + `), new(Account)); err != nil {
		t.Errorf("readOnly member required: %v", err)
	}
}

// TestStrictDecoding: an enum refuses undeclared values (Valid and
// UnmarshalJSON), a struct a missing required property or a mistyped one.
func TestStrictDecoding(t *testing.T) {
	if !AccountKindBusiness.Valid() || !AccountKind("personal").Valid() || AccountKind("Business").Valid() || AccountKind("").Valid() {
		t.Error("AccountKind.Valid does not follow the enum")
	}
	var k AccountKind
	if err := json.Unmarshal([]byte(` + "`" + `"business"` + "`" + `), &k); err != nil || k != AccountKindBusiness {
		t.Errorf("business: %q %v", k, err)
	}
	if err := json.Unmarshal([]byte(` + "`" + `"other"` + "`" + `), &k); err == nil || k != AccountKindBusiness {
		t.Errorf("other: %q %v", k, err)
	}
	if err := json.Unmarshal([]byte(` + "`" + `{"id":"a","owner":{},"kind":"other"}` + "`" + `), new(Account)); err == nil {
		t.Error("an account of kind other was accepted")
	}
	var f File
	if err := json.Unmarshal([]byte(` + "`" + `{"type":"file","name":"a"}` + "`" + `), &f); err != nil || f.Name != "a" {
		t.Errorf("file: %+v %v", f, err)
	}
	for _, bad := range []string{` + "`" + `{"type":"file"}` + "`" + `, ` + "`" + `{"name":"a"}` + "`" + `, ` + "`" + `{"type":"file","name":3}` + "`" + `} {
		if err := json.Unmarshal([]byte(bad), new(File)); err == nil {
			t.Errorf("file %s was accepted", bad)
		}
	}
}

type srv struct{ Unimplemented }

func (srv) ListPets(ctx context.Context, req ListPetsRequest) (ListPetsResponse, error) {
	return ListPets200Response{Body: []Pet{}, XRateLimit: 42, XNextDate: &idemtype.Date{Year: 2024, Month: 1, Day: 2}}, nil
}

func (srv) GetAccount(ctx context.Context, req GetAccountRequest) (GetAccountResponse, error) {
	secret := "s3cret"
	return GetAccount200Response{Body: Account{ID: "a", Password: &secret, Owner: &Owner{Secret: &secret}}}, nil
}

func TestResponses(t *testing.T) {
	h := NewHandler(srv{}, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/pets", nil))
	if rec.Code != 200 || rec.Header().Get("X-Rate-Limit") != "42" || rec.Header().Get("X-Next-Date") != "2024-01-02" || rec.Header()["X-Cursor"] != nil {
		t.Errorf("pets: %d %v", rec.Code, rec.Header())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/account", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || strings.Contains(string(body), "s3cret") || strings.Contains(string(body), "password") || !strings.Contains(string(body), ` + "`" + `"owner":{}` + "`" + `) {
		t.Errorf("account: %d %s", rec.Code, body)
	}
}

// TestClientHeaders: the generated client parses typed headers back.
func TestClientHeaders(t *testing.T) {
	srv := httptest.NewServer(NewHandler(srv{}, nil))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ListPets(context.Background(), ListPetsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ok, isOK := res.Response.(ListPets200Response)
	if !isOK || ok.XRateLimit != 42 || ok.XNextDate == nil || ok.XNextDate.Day != 2 || ok.XCursor != "" {
		t.Errorf("response %+v", res.Response)
	}
}

func ptrTo[T any](v T) *T { return &v }
`

// TestGeneratedTypes generates typesSpec and runs typesTest against it.
func TestGeneratedTypes(t *testing.T) {
	cfg := Config{Spec: "openapi.yaml", SpecData: []byte(typesSpec), Package: "api", Output: "out", Client: ClientConfig{Enabled: true}}
	files, _, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := allSource(files)
	for _, want := range []string{
		"Owner *Owner `json:\"owner\"`", "Manager idemtype.Nullable[Owner] `json:\"manager,omitzero\"`",
		"Note idemtype.Nullable[string] `json:\"note,omitzero\"`", "Born *idemtype.Date `json:\"born,omitzero\"`",
		"Metadata idemtype.OrEmpty[map[string]string] `json:\"metadata,omitzero\"`", "Description *string `json:\"description,omitzero\"`",
		"Customer *StringOrOwner `json:\"customer,omitzero\"`", "AdditionalProperties map[string]int64 `json:\"-\"`",
		"XRateLimit int64 // header X-Rate-Limit, required", "XNextDate *idemtype.Date // header X-Next-Date, sent when not nil",
		"Password *string `json:\"password,omitzero\"`",
		// untyped numbers stay exact inside a struct that keeps undeclared members
		"if err := idemimpl.Unmarshal(b, (*plain)(v)); err != nil {",
	} {
		if !containsCode(src, want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
	spec, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := spec.Model
	var account *Type
	for _, ty := range m.Types {
		if ty.Name == "Account" {
			account = ty
		}
	}
	fields := map[string]*Field{}
	for _, f := range account.Fields {
		fields[f.JSONName] = f
	}
	if f := fields["id"]; !f.ReadOnly || !f.Required || f.WriteOnly {
		t.Errorf("id: %+v", f)
	}
	if f := fields["password"]; !f.WriteOnly || f.ReadOnly {
		t.Errorf("password: %+v", f)
	}
	if d := fields["limit"].Default; d == nil || d.JSON != "10" || d.Value != float64(10) || d.Type.Name != "int64" {
		t.Errorf("limit default: %+v", d)
	}
	if d := fields["kind"].Default; d == nil || d.JSON != `"business"` || d.Type.TypeName() != "AccountKind" {
		t.Errorf("kind default: %+v", d)
	}
	if fields["note"].Location != "#/components/schemas/Account/properties/note" {
		t.Errorf("note: %+v", fields["note"])
	}
	if testing.Short() {
		return
	}
	files = append(files, File{Name: "types_test.go", Content: []byte(typesTest)})
	modulePackage(t, "types", files)
	moduleResult(t, "types")
}
