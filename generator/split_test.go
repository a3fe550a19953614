package generator

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// splitTest is compiled into the split package and run against a real
// PostgreSQL: the service is written with the package's own names (the
// aliases), answers through the engine, and its client reads the answers.
const splitTest = `package api

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"net/http/httptest"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/idemgen/idemgen/runtime/pgtest"
	"github.com/jackc/pgx/v5"
)

type srv struct {
	Unimplemented
	runs atomic.Int64
}

func str(s string) *string { return &s }

func (s *srv) CreatePet(ctx context.Context, tx pgx.Tx, req CreatePetRequest) (CreatePetResponse, error) {
	if req.Body.Name == "ghost" {
		gone := NotFoundResponseXReasonGone
		return NotFoundResponse{XReason: &gone}, nil
	}
	kind := req.Body.Kind
	return CreatePet201Response{XPetKind: &kind, Body: Pet{
		ID: s.runs.Add(1), Name: req.Body.Name, Kind: req.Body.Kind, Animal: req.Body.Animal,
		Microchip: req.Body.Microchip, Owner: &Owner{Name: str("ann"), Secret: str("s3cret"), WithoutWriteOnly2: str("kept")},
	}}, nil
}

func (s *srv) GetPet(ctx context.Context, req GetPetRequest) (GetPetResponse, error) {
	if req.ID == 7 {
		return ProblemResponse{Status: 418, Body: ProblemResponseBody{Title: str("teapot")}}, nil
	}
	missing := NotFoundResponseXReasonMissing
	return GetPet404Response{XReason: &missing, Body: NotFoundResponseBody{ID: &req.ID}}, nil
}

func (s *srv) ListPets(ctx context.Context, req ListPetsRequest) (ListPetsResponse, error) {
	if req.Kind == nil || *req.Kind != KindDog {
		return ListPets200Response{Body: ListPets200ResponseBody{Items: []Pet{}}}, nil
	}
	return ListPets200Response{Body: ListPets200ResponseBody{Items: []Pet{{ID: 1, Name: "rex", Kind: KindDog,
		Animal: Animal{Dog: &Dog{Kind: "dog", GoodBoy: true}}, Microchip: str("chip")}}}}, nil
}

func TestSplitServes(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	engine, err := idem.New(db.Pool, idem.Config{Operations: IdempotentOperations})
	if err != nil {
		t.Fatal(err)
	}
	s := &srv{}
	hs := httptest.NewServer(NewHandler(s, engine))
	defer hs.Close()
	c, err := NewClient(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Through the engine: the writeOnly members (the pet's microchip, the
	// owner's secret) are not sent back; a retry is replayed.
	req := CreatePetRequest{Body: NewPet{Name: "tom", Kind: KindCat, Animal: Animal{Cat: &Cat{Kind: "cat", Indoor: true}}, Microchip: str("chip")}}
	key := "0190a8e2-7c3b-7d4e-8f00-000000000001"
	for i, replayed := range []bool{false, true} {
		res, err := c.CreatePet(ctx, req, idemclient.WithIdempotencyKey(key))
		if err != nil {
			t.Fatal(err)
		}
		created, ok := res.Response.(CreatePet201Response)
		if !ok || res.Replayed != replayed || created.Body.Name != "tom" || created.Body.Animal.Cat == nil || !created.Body.Animal.Cat.Indoor ||
			created.XPetKind == nil || *created.XPetKind != KindCat {
			t.Fatalf("createPet, call %d: %+v %#v", i, res, res.Response)
		}
		if created.Body.Microchip != nil || created.Body.Owner == nil || created.Body.Owner.Secret != nil ||
			created.Body.Owner.WithoutWriteOnly2 == nil || *created.Body.Owner.WithoutWriteOnly2 != "kept" {
			t.Errorf("createPet, call %d: writeOnly members sent back, or the others lost: %+v %+v", i, created.Body, created.Body.Owner)
		}
	}
	if n := s.runs.Load(); n != 1 {
		t.Errorf("createPet ran %d times for one key, want 1", n)
	}
	res, err := c.CreatePet(ctx, CreatePetRequest{Body: NewPet{Name: "ghost", Kind: KindDog, Animal: Animal{Dog: &Dog{Kind: "dog"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if nf, ok := res.Response.(CreatePet404Response); !ok || nf.XReason == nil || *nf.XReason != NotFoundResponseXReasonGone {
		t.Errorf("createPet ghost: %#v", res.Response)
	}

	// The shared responses, under each operation's names.
	got, err := c.GetPet(ctx, GetPetRequest{ID: 5})
	if err != nil {
		t.Fatal(err)
	}
	if nf, ok := got.Response.(GetPet404Response); !ok || nf.Body.ID == nil || *nf.Body.ID != 5 || *nf.XReason != NotFoundResponseXReasonMissing {
		t.Errorf("getPet 5: %#v", got.Response)
	}
	// The default, problem+json: the client's *idemclient.Error.
	_, err = c.GetPet(ctx, GetPetRequest{ID: 7})
	if e, ok := err.(*idemclient.Error); !ok || e.Status != 418 || e.Problem == nil || e.Problem.Title != "teapot" {
		t.Errorf("getPet 7: %v", err)
	}

	// An enum in the query; a writeOnly member in a list is stripped.
	dog := KindDog
	list, err := c.ListPets(ctx, ListPetsRequest{Kind: &dog})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := list.Response.(ListPets200Response); !ok || len(l.Body.Items) != 1 || l.Body.Items[0].Animal.Dog == nil || l.Body.Items[0].Microchip != nil {
		t.Errorf("listPets dog: %#v", list.Response)
	}
	// An operation the service does not implement: Unimplemented's 501.
	if _, err := c.DeletePet(ctx, DeletePetRequest{ID: 1}); err == nil || err.(*idemclient.Error).Status != 501 {
		t.Errorf("deletePet: %v, want a 501", err)
	}
	r, err := http.Get(hs.URL + "/pets?kind=fish")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 400 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		t.Errorf("listPets fish: %d %s, want 400 problem+json", r.StatusCode, r.Header.Get("Content-Type"))
	}
}
`

// TestSplit: with split: true the types are compiled as two packages of
// their own below the package (internal/schematypes, internal/optypes),
// and Unimplemented in a third, and the package declares an alias of
// every type and a constant of every enum value: the names users write are
// exactly the unsplit package's, and the server's code is the same but for
// the encoders' package. The generated package serves through the engine
// over HTTP (splitTest).
func TestSplit(t *testing.T) {
	spec := filepath.Join("testdata", "golden", "split", "openapi.yaml")
	cfg := Config{Spec: spec, Package: "api", Output: "out", Client: ClientConfig{Enabled: true}}
	plain, _, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	scfg := cfg
	scfg.Split, scfg.ImportPath = new(true), generatedModule+"/split"
	split, warnings, err := Generate(scfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range split {
		names = append(names, f.Name)
	}
	want := []string{"client.gen.go", "internal/optypes/types.gen.go", "internal/schematypes/types.gen.go", "internal/unimplemented/unimplemented.gen.go", "server.gen.go", "types.gen.go"}
	if !slices.Equal(names, want) {
		t.Fatalf("split files %v, want %v", names, want)
	}
	file := func(files []File, name string) []byte {
		for _, f := range files {
			if f.Name == name {
				return f.Content
			}
		}
		t.Fatalf("no %s", name)
		return nil
	}

	// The package's exported names, split or not.
	plainNames := exportedDecls(t, file(plain, "types.gen.go"))
	splitNames := exportedDecls(t, file(split, "types.gen.go"))
	if !slices.Equal(plainNames, splitNames) {
		t.Errorf("exported names of types.gen.go:\nunsplit %v\nsplit   %v", plainNames, splitNames)
	}
	if len(plainNames) < 30 {
		t.Errorf("only %d exported names: %v", len(plainNames), plainNames)
	}
	// Every name of the two packages but the encoders is aliased.
	declared := append(exportedDecls(t, file(split, "internal/schematypes/types.gen.go")), exportedDecls(t, file(split, "internal/optypes/types.gen.go"))...)
	declared = slices.DeleteFunc(declared, func(n string) bool { return strings.HasPrefix(n, "func Encode") })
	slices.Sort(declared)
	if !slices.Equal(declared, splitNames) {
		t.Errorf("the split packages declare %v, the package aliases %v", declared, splitNames)
	}
	// The server: the same declarations, but the encoders' package and
	// Unimplemented's (an alias of the unimplemented package's, whose
	// methods are the unsplit server's).
	s := string(file(split, "server.gen.go"))
	if !strings.Contains(s, "optypes.EncodeCreatePetResponse(resp)") || !strings.Contains(s, "type Unimplemented = unimplemented.Unimplemented") {
		t.Errorf("the split server does not call optypes.EncodeCreatePetResponse, or does not alias Unimplemented")
	}
	plainDecls, plainStubs := serverDecls(t, file(plain, "server.gen.go"))
	splitDecls, _ := serverDecls(t, []byte(strings.ReplaceAll(s, "optypes.Encode", "encode")))
	if !slices.Equal(plainDecls, splitDecls) {
		t.Errorf("the split server's declarations differ from the unsplit one's beyond the encoders' package and Unimplemented:\n%s", diffText("server.gen.go", []byte(strings.Join(plainDecls, "\n")), []byte(strings.Join(splitDecls, "\n"))))
	}
	_, splitStubs := serverDecls(t, file(split, "internal/unimplemented/unimplemented.gen.go"))
	for i := range splitStubs {
		splitStubs[i] = strings.ReplaceAll(splitStubs[i], "optypes.", "")
	}
	if len(plainStubs) != 4 || !slices.Equal(plainStubs, splitStubs) {
		t.Errorf("Unimplemented's methods: unsplit\n%s\nsplit\n%s", strings.Join(plainStubs, "\n"), strings.Join(splitStubs, "\n"))
	}
	if !containsCode(string(file(split, "internal/schematypes/types.gen.go")), "func (v Owner) WithoutWriteOnly() Owner {") ||
		!containsCode(string(file(plain, "types.gen.go")), "func (v Owner) withoutWriteOnly() Owner {") {
		t.Errorf("the writeOnly method: exported split, unexported otherwise")
	}
	// Split, the method takes the field's name, with a warning.
	if !containsCode(string(file(split, "internal/schematypes/types.gen.go")), "WithoutWriteOnly2 *string `json:\"withoutWriteOnly,omitzero\"`") ||
		!containsCode(string(file(plain, "types.gen.go")), "WithoutWriteOnly *string `json:\"withoutWriteOnly,omitzero\"`") {
		t.Errorf("the field withoutWriteOnly: WithoutWriteOnly2 split, WithoutWriteOnly otherwise")
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0].String(), "WithoutWriteOnly2") {
		t.Errorf("warnings: %v", warnings)
	}

	// Split without an import path, outside any module: a clear error.
	nomod := cfg
	nomod.Split, nomod.Output = new(true), filepath.Join(t.TempDir(), "api")
	if _, _, err := Generate(nomod); err == nil || !strings.Contains(err.Error(), "split") || !strings.Contains(err.Error(), "importPath") {
		t.Errorf("split outside a module: %v", err)
	}
	// The import path from go.mod.
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/pets\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromMod := cfg
	fromMod.Split, fromMod.Output = new(true), filepath.Join(mod, "svc", "api")
	files, _, err := Generate(fromMod)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(file(files, "types.gen.go"), []byte(`"example.com/pets/svc/api/internal/schematypes"`)) {
		t.Errorf("split in module example.com/pets: types.gen.go imports\n%s", file(files, "types.gen.go")[:400])
	}
	// Written, then unsplit: Write removes the split packages' files.
	if _, err := Write(fromMod.Output, files); err != nil {
		t.Fatal(err)
	}
	fromMod.Split = new(false)
	unsplit, _, err := Generate(fromMod)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := Diff(fromMod.Output, unsplit); err != nil || !strings.Contains(d, "internal/optypes/types.gen.go") {
		t.Errorf("Diff after unsplitting does not name the stale split files: %v\n%.300s", err, d)
	}
	wrote, err := Write(fromMod.Output, unsplit)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fromMod.Output, "internal")); !os.IsNotExist(err) {
		t.Errorf("internal/ left after unsplitting (wrote %v): %v", wrote, err)
	}

	if testing.Short() {
		return
	}
	modulePackage(t, "split", append(split, File{Name: "split_test.go", Content: []byte(splitTest)}))
	moduleResult(t, "split")
}

// serverDecls prints a Go file's declarations but its imports, apart:
// Unimplemented's methods (stubs), and the others, where the type
// Unimplemented is left out.
func serverDecls(t *testing.T, src []byte) (decls, stubs []string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	show := func(n any) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil && show(d.Recv.List[0].Type) == "Unimplemented" {
				stubs = append(stubs, show(d))
				continue
			}
		case *ast.GenDecl:
			if d.Tok == token.IMPORT || d.Tok == token.TYPE && d.Specs[0].(*ast.TypeSpec).Name.Name == "Unimplemented" {
				continue
			}
		}
		decls = append(decls, show(d))
	}
	return decls, stubs
}

// exportedDecls lists, sorted, the exported package-level declarations of
// a Go file: "type X", "const X", "func X" (methods left out).
func exportedDecls(t *testing.T, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.IsExported() {
				out = append(out, "func "+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						out = append(out, "type "+s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, d.Tok.String()+" "+n.Name)
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
