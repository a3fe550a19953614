package load

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

// loadWhole loads a spec as Document did before documents were split:
// whole, by kin-openapi.
func loadWhole(t testing.TB, name string, data []byte) *openapi3.T {
	t.Helper()
	abs, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := NewLoader(Options{}).LoadFromDataWithPath(data, &url.URL{Path: filepath.ToSlash(abs)})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// testdata is the generator's, whose specs this package loads.
var testdata = filepath.Join("..", "..", "testdata")

// readSpec reads a spec of the generator's testdata/specs, unzipped.
func readSpec(t testing.TB, file string) (name string, data []byte) {
	t.Helper()
	path := filepath.Join(testdata, "specs", file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(file, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
		path = strings.TrimSuffix(path, ".gz")
	}
	return path, data
}

// TestSplitLoadsAlike loads every spec of testdata, YAML and JSON, in parts
// and whole, and compares the two documents field by field, unexported
// fields and resolved references included. Mutations tried: schemas
// decoded with Schema.UnmarshalJSON instead of SchemaRef's (the $refs are
// lost), mapping keys left unsorted (no difference on these specs: see
// TestSplitYAMLValues), the x- members of paths dropped, integer keys
// written as decoded floats.
//
// Under -race (make test's unit-modules) it loads every spec in parts only:
// the parts are decoded on every core, which is what the race detector
// watches; the whole load and the comparison run one goroutine and are
// left to the run without -race (unit-generator), where they cost a
// fraction of the time.
func TestSplitLoadsAlike(t *testing.T) {
	var files []string
	err := filepath.WalkDir(testdata, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case e.IsDir() && (e.Name() == "got" || e.Name() == "want"):
			return filepath.SkipDir
		case strings.HasSuffix(path, ".yaml"), strings.HasSuffix(path, ".yml"), strings.HasSuffix(path, ".json"), strings.HasSuffix(path, ".json.gz"):
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	nsplit := 0
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			name := path
			if strings.HasSuffix(path, ".gz") {
				name, data = readSpec(t, strings.TrimPrefix(path, filepath.Join(testdata, "specs")+string(filepath.Separator)))
			}
			if raceEnabled {
				if _, ok := split(data); ok {
					nsplit++
					if _, err := Document(data, name, Options{}); err != nil {
						t.Skipf("not an OpenAPI document kin-openapi loads: %v", err)
					}
				}
				return
			}
			whole, err := NewLoader(Options{}).LoadFromDataWithPath(data, &url.URL{Path: mustAbs(t, name)})
			if err != nil {
				t.Skipf("not an OpenAPI document kin-openapi loads: %v", err)
			}
			NullTypes(whole) // as Document does after either load
			NullConsts(data, whole)
			if _, ok := split(data); !ok {
				t.Logf("not split")
			} else {
				nsplit++
			}
			got, err := Document(data, name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := deepDiff(reflect.ValueOf(got), reflect.ValueOf(whole), "doc", map[ptrKey]uintptr{}); diff != "" {
				t.Errorf("split load differs from the whole load: %s", diff)
			}
		})
	}
	if nsplit < 10 {
		t.Errorf("only %d specs of %d were split", nsplit, len(files))
	}
}

func mustAbs(t testing.TB, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(abs)
}

// TestSplitYAMLValues: the YAML scalars and keys whose JSON needs care load
// as kin-openapi's own conversion loads them, and what the split does not
// handle is loaded whole. Mutations tried: plainInt accepting -0 and 010,
// timestamps decoded as times, keys left unsorted (the case-insensitive
// "Type" then wins over "type").
func TestSplitYAMLValues(t *testing.T) {
	const head = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\n"
	for _, tc := range []struct {
		name  string
		yaml  string
		split bool
	}{
		{"numbers", `paths:
  /a:
    get:
      responses:
        200: {description: ok}
        "201": {description: created}
      x-n: [0, -0, 010, 0x1F, 0o17, 1_000, +5, -12, 1.0, 1.50, 1e3, -0.0, .5, 12345678901234567890, 123456789012345678, True, FALSE, ~, null, 2024-01-02, 2024-01-02T03:04:05Z, '7', "yes", yes, on]
components:
  schemas:
    A: {type: integer, maximum: 1.0e2, minimum: -0, multipleOf: 0.5, default: 10, enum: [1, 2.0, 3e0]}
    B: {type: integer, Type: string, nullable: true}
    C: {type: string, format: date, example: 2024-01-02, default: 2024-01-02}
    D: {$ref: '#/components/schemas/A', description: "a\u00e9\t\"q\"\\"}
x-top: {1: a, 2.5: b, true: c}
`, true},
		{"anchors", `paths: {}
components:
  schemas:
    A: &a {type: string}
    B: *a
`, false},
		{"merge key", `paths: {}
components:
  schemas:
    A: &a {type: string}
    B: {<<: *a, maxLength: 3}
`, false},
		{"a key only by case", "Paths: {}\n", false},
		{"custom tag", "paths: {}\nx-a: !foo bar\n", false},
		{"infinity", "paths: {}\nx-a: .inf\n", false},
		{"null paths", "paths:\n", false},
		{"no paths", "components: {schemas: {A: {type: string}}}\n", true},
		{"webhooks", "openapi: 3.1.0\nwebhooks:\n  a:\n    post:\n      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/A'}}}}\n      responses: {'200': {description: ok}}\ncomponents: {schemas: {A: {type: string}}}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(head + tc.yaml)
			if strings.HasPrefix(tc.yaml, "openapi:") {
				data = []byte(strings.Replace(head, "openapi: 3.0.3\n", "", 1) + tc.yaml)
			}
			if _, ok := split(data); ok != tc.split {
				t.Errorf("split: %v, want %v", ok, tc.split)
			}
			got, err := Document(data, "spec.yaml", Options{})
			if tc.name == "infinity" { // JSON has no infinity
				if err == nil || !strings.Contains(err.Error(), "unsupported value: +Inf") {
					t.Errorf("error %v, want kin-openapi's", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			whole := loadWhole(t, "spec.yaml", data)
			if diff := deepDiff(reflect.ValueOf(got), reflect.ValueOf(whole), "doc", map[ptrKey]uintptr{}); diff != "" {
				t.Errorf("split load differs from the whole load: %s", diff)
			}
		})
	}
}

// TestSplitErrors: a document the parts cannot be loaded from gets
// kin-openapi's error for the whole document, and a JSON value followed by
// more is loaded whole, as kin-openapi loads it.
func TestSplitErrors(t *testing.T) {
	for _, spec := range []string{
		"openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Nope'}}}}}\n",
		"openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\ncomponents: {schemas: {A: {type: string, maxLength: abc}}}\n",
		`{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"description": 5}}}}}}`,
		`{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}} x`,
		`{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}} {}`,
	} {
		got, err := Document([]byte(spec), "spec.yaml", Options{})
		abs, _ := filepath.Abs("spec.yaml")
		doc, want := NewLoader(Options{}).LoadFromDataWithPath([]byte(spec), &url.URL{Path: filepath.ToSlash(abs)})
		switch {
		case want == nil && err == nil: // kin-openapi's YAML path reads a JSON value followed by more
			if diff := deepDiff(reflect.ValueOf(got), reflect.ValueOf(doc), "doc", map[ptrKey]uintptr{}); diff != "" {
				t.Errorf("%s: %s", spec, diff)
			}
		case err == nil || want == nil || err.Error() != want.Error():
			t.Errorf("error %v, want %v", err, want)
		}
	}
}

type ptrKey struct {
	t reflect.Type
	p uintptr
}

// deepDiff compares two values of the same type field by field, following
// each pointer once (and checking that what one document shares, the other
// shares alike), and describes the first difference.
func deepDiff(a, b reflect.Value, path string, seen map[ptrKey]uintptr) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one is invalid"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: types %s and %s", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil %v against %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		key := ptrKey{a.Type(), a.Pointer()}
		if p, ok := seen[key]; ok {
			if p != b.Pointer() {
				return path + ": shared differently"
			}
			return ""
		}
		seen[key] = b.Pointer()
		return deepDiff(a.Elem(), b.Elem(), path, seen)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil %v against %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		return deepDiff(a.Elem(), b.Elem(), path, seen)
	case reflect.Struct:
		for i := range a.NumField() {
			if d := deepDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, seen); d != "" {
				return d
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil slice %v against %v", path, a.IsNil(), b.IsNil())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d against %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := deepDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i), seen); d != "" {
				return d
			}
		}
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil map %v against %v", path, a.IsNil(), b.IsNil())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d entries against %d", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				return fmt.Sprintf("%s[%v]: missing", path, k)
			}
			if d := deepDiff(a.MapIndex(k), bv, fmt.Sprintf("%s[%v]", path, k), seen); d != "" {
				return d
			}
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Sprintf("%s: %q against %q", path, a.String(), b.String())
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Sprintf("%s: %v against %v", path, a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Sprintf("%s: %d against %d", path, a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Sprintf("%s: %d against %d", path, a.Uint(), b.Uint())
		}
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		if x != y && (x == x || y == y) || x == 0 && y == 0 && (1/x > 0) != (1/y > 0) {
			return fmt.Sprintf("%s: %v against %v", path, x, y)
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v against %v", path, a.IsNil(), b.IsNil())
		}
	default:
		return fmt.Sprintf("%s: cannot compare %s", path, a.Kind())
	}
	return ""
}

// TestParseYAMLSections: a YAML document parsed in sections on every core
// gives the nodes the whole parse gives, and what a cut at a top-level key
// would break is parsed whole. Mutations tried: simpleKey accepting any
// column-0 line (the flow mapping case then loses its continuation), the
// sections' mappings not merged (fails on every spec).
func TestParseYAMLSections(t *testing.T) {
	pad := "x-pad: |\n" + strings.Repeat("  padding line\n", 50) // makes the sections balance
	docs := map[string]struct {
		doc   string
		split bool
	}{
		"keys":           {"a: 1\n# comment\n" + pad + "b:\n  c: [1, 2]\n\nd: x\n", true},
		"block scalar":   {pad + "a: |\n  b: 1\n  c: 2\nd: 3\n", true},
		"quoted key":     {pad + "\"a b\": 1\n", false},
		"flow mapping":   {pad + "a: {b: 1,\nc: 2}\n", true},
		"quoted":         {pad + "a: \"x\ny: z\"\n", true},
		"anchor":         {"a: &x {b: 1}\n" + pad + "c: *x\n", true},
		"marker":         {"---\n" + pad + "a: 1\n", false},
		"sequence":       {"- a\n- b\n", false},
		"sequence value": {"a:\n- 1\n" + pad + "b:\n- 2\n", true},
		"top sequence":   {"- a: 1\n" + pad + "b: 2\n", true},
		"duplicate":      {"a: 1\n" + pad + "a: 2\n", true},
	}
	for _, file := range []string{"stripe-spec3.yaml", "resend.yaml", "spotify-web-api.yml", "petstore-expanded.yaml"} {
		_, data := readSpec(t, file)
		docs[file] = struct {
			doc   string
			split bool
		}{string(data), true}
	}
	for name, tc := range docs {
		t.Run(name, func(t *testing.T) {
			data := []byte(tc.doc)
			if got := len(yamlSections(data, 2)) > 1; got != tc.split {
				t.Errorf("sections: %v, want %v", got, tc.split)
			}
			var root yaml.Node
			wantErr := yaml.Unmarshal(data, &root)
			got, err := parseYAML(data)
			if wantErr != nil || err != nil {
				if (wantErr == nil) != (err == nil) || err.Error() != wantErr.Error() {
					t.Errorf("error %v, want %v", err, wantErr)
				}
				return
			}
			if d := nodeDiff(got, root.Content[0], "doc"); d != "" {
				t.Error(d)
			}
		})
	}
}

func nodeDiff(a, b *yaml.Node, path string) string {
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Style != b.Style || a.Anchor != b.Anchor || len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: %v %s %q (%d) against %v %s %q (%d)", path, a.Kind, a.Tag, a.Value, len(a.Content), b.Kind, b.Tag, b.Value, len(b.Content))
	}
	if (a.Alias == nil) != (b.Alias == nil) {
		return path + ": alias"
	}
	for i := range a.Content {
		if d := nodeDiff(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", path, i)); d != "" {
			return d
		}
	}
	return ""
}
