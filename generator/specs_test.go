package generator

import (
	"bytes"
	"compress/gzip"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// realSpecs are the public specs of testdata/specs, generated without a
// config, and what their known traps must produce.
var realSpecs = []struct {
	file     string
	warnings []string            // warnings that must be among the output's
	clashes  int                 // identifier clashes settled with a number (each warned about)
	contains map[string][]string // generated file -> snippets it must hold
}{
	{"petstore-expanded.yaml", nil, 0, nil},
	{"kratos-api.json", []string{
		`kratos-api.json: info.version is empty`,
		`kratos-api.json: security scheme "sessionToken" is not defined`,
		// kratos' five clashes: four settled by a number, the fifth (an
		// allOf wrapper named like its property) is no longer a type.
		`Go identifier NullTime (package) is generated for both schema #/components/schemas/NullTime and schema #/components/schemas/nullTime; the latter is named NullTime2`,
		// A schema named like an operation's response type keeps its name.
		`Go identifier CreateFedcmFlowResponse (package) is generated for both schema #/components/schemas/createFedcmFlowResponse and operation "createFedcmFlow" (GET /self-service/fed-cm/parameters) #/paths/~1self-service~1fed-cm~1parameters/get; the latter is named CreateFedcmFlowResponse2`,
		`Go identifier BatchPatchIdentitiesResponse (package)`, `Go identifier ManageSessionsResponse (package)`,
	}, 4, map[string][]string{"types.gen.go": {
		"Data ContinueWithDeviceAuthnPinEntryUiData `json:\"data\"`", // allOf: [{$ref}] is the referenced type
	}}},
	{"spotify-web-api.yml", nil, 0, nil},
	{"resend.yaml", []string{
		`resend.yaml: webhooks: the document's security (bearerAuth) does not apply to webhooks; without security of their own: contact.created, contact.deleted,`,
	}, 0, map[string][]string{"webhooks.gen.go": {
		"func SendEmailSent(ctx context.Context, tx pgx.Tx, payload EmailSentEvent, opts ...events.Option) error {",
		"\tEmailSent(ctx context.Context, tx pgx.Tx, payload EmailSentEvent) error\n",
		`handle("email.delivery_delayed", h.handleWebhookEmailDeliveryDelayed)`,
	}}},
	// Stripe: 100 clashes before, nearly all its nullable single-$ref anyOf
	// wrappers becoming named types; they are the referenced types now. Left:
	// the 18 values of source.type, whose constants SourceType<Value> are
	// also the names of the source_type_<value> schemas. The 16 timezones
	// of the report run form body that differ only in a sign (Etc/GMT+1
	// and Etc/GMT-1) spell it (Plus1, Minus1) instead of being numbered.
	{"stripe-spec3.yaml", []string{
		`Go identifier SourceTypeWechat (package) is generated for both schema #/components/schemas/source_type_wechat and enum value #/components/schemas/source/properties/type/enum/17; the latter is named SourceTypeWechat2`,
	}, 18, map[string][]string{"types.gen.go": {
		`PostReportingReportRunsRequestBodyParametersTimezoneEtcGMTPlus1 PostReportingReportRunsRequestBodyParametersTimezone = "Etc/GMT+1"`,
		`PostReportingReportRunsRequestBodyParametersTimezoneEtcGMTMinus1 PostReportingReportRunsRequestBodyParametersTimezone = "Etc/GMT-1"`,
		"BusinessProfile idemtype.Nullable[AccountBusinessProfile] `json:\"business_profile,omitzero\"`", // anyOf: [{$ref}], nullable
		"Customer idemtype.Nullable[StringOrCustomerOrDeletedCustomer] `json:\"customer,omitzero\"`",     // expandable
		"type StringOrCustomerOrDeletedCustomer struct {",
	}}},
	// GitHub: 23 errors before (fields and constants for +1 and -1, add and
	// Add, "/", ...).
	{"api.github.com.json.gz", []string{
		`Go identifier CodeScanningVariantAnalysisStatus (package) is generated for both schema #/components/schemas/code-scanning-variant-analysis-status and schema #/components/schemas/code-scanning-variant-analysis/properties/status; the latter is named CodeScanningVariantAnalysisStatus2`,
		`Go identifier WebhookMetaDeletedHookEventsItemStar (package) is generated for both enum value #/components/schemas/webhook-meta-deleted/properties/hook/properties/events/items/enum/43 and enum value #/components/schemas/webhook-meta-deleted/properties/hook/properties/events/items/enum/0; the latter is named WebhookMetaDeletedHookEventsItemStar2`,
	}, 2, map[string][]string{"types.gen.go": {
		"Plus1 int64 `json:\"+1\"`", "Minus1 int64 `json:\"-1\"`",
		`ReactionContentPlus1 ReactionContent = "+1"`, `ReactionContentMinus1 ReactionContent = "-1"`,
	}, "server.gen.go": {
		// /compare/{base}...{head}: one wildcard, split by the handler
		// (left out with a warning before).
		`{"repos/compare-commits,repos/compare-commits-with-basehead", "GET", "/repos/{owner}/{repo}/compare/{basehead}", (*handler).routeReposCompareCommits},`,
		`{Wildcard: "basehead", Literals: []string{"", "...", ""}, Params: []string{"base", "head"}},`,
	}}},
}

// readSpec reads a spec of testdata/specs, decompressing a .gz one; the
// name is the spec's without .gz.
func readSpec(t testing.TB, file string) (name string, data []byte) {
	t.Helper()
	path := filepath.Join("testdata", "specs", file)
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

func realSpecConfig(t testing.TB, file string) Config {
	t.Helper()
	path, data := readSpec(t, file)
	// One package whatever the spec's size (GitHub's is above SplitAbove):
	// the tests of the generated packages import it alone; TestSplit and
	// TestSplitAbove test the split.
	return Config{Spec: path, SpecData: addRootExtension(t, data), Package: "api", Output: filepath.Join("testdata", "out"), Split: new(false)}
}

// renderedSpecs holds render's output for each real spec, rendered once
// per test binary and shared by TestRealSpecs and TestFormatSourcesAlike:
// rendering Stripe's and GitHub's specs is most of the package's own work,
// and formatting them (formatRendered) the next largest.
var renderedSpecs sync.Map // spec file -> *renderedSpec

type renderedSpec struct {
	once     sync.Once
	files    []File
	warnings []Warning
	err      error

	formatOnce sync.Once
	formatted  []File // formatRendered(files)
	formatErr  error
}

// renderRealSpec returns render(realSpecConfig(t, file)), rendered on the
// first call. The caller may change the files it gets (not their bytes:
// formatRendered replaces Content).
func renderRealSpec(t testing.TB, file string) ([]File, []Warning, error) {
	t.Helper()
	v, _ := renderedSpecs.LoadOrStore(file, new(renderedSpec))
	r := v.(*renderedSpec)
	r.once.Do(func() { r.files, r.warnings, r.err = render(realSpecConfig(t, file)) })
	return slices.Clone(r.files), slices.Clone(r.warnings), r.err
}

// formatRealSpec returns formatRendered(renderRealSpec(t, file)), formatted
// on the first call: what Generate returns for the spec.
func formatRealSpec(t testing.TB, file string) ([]File, []Warning, error) {
	t.Helper()
	files, warnings, err := renderRealSpec(t, file)
	v, _ := renderedSpecs.Load(file)
	r := v.(*renderedSpec)
	r.formatOnce.Do(func() { r.formatted, _, r.formatErr = formatRendered(files, nil, err) })
	return slices.Clone(r.formatted), warnings, r.formatErr
}

// TestRealSpecs generates every public spec without a config (with a root
// `x-idempotent: {}`) and, unless -short, builds, vets and tests the output
// (writeRouteTests). Every spec's package goes into one module, built,
// vetted and tested by one go test: it compiles, vets, links and runs the
// packages side by side, and loads the module graph once.
func TestRealSpecs(t *testing.T) {
	var mod string
	var pkgs []string
	if !testing.Short() {
		mod = modulePackage(t, "realspecs", nil)
	}
	for _, tc := range realSpecs {
		t.Run(strings.Split(tc.file, ".")[0], func(t *testing.T) {
			files, warnings, err := formatRealSpec(t, tc.file) // Generate, with the spec rendered and formatted once per run
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			clashes := 0
			for _, w := range warnings {
				got = append(got, w.String())
				if strings.HasPrefix(w.Message, "Go identifier ") {
					clashes++
				}
			}
			all := strings.Join(got, "\n")
			if strings.Contains(all, "not generated") {
				t.Errorf("an operation is left out:\n%s", all)
			}
			for _, want := range tc.warnings {
				if !strings.Contains(all, want) {
					t.Errorf("warnings lack %q; got:\n%s", want, all)
				}
			}
			if clashes != tc.clashes {
				t.Errorf("%d clashes, want %d:\n%s", clashes, tc.clashes, all)
			}
			for name, snippets := range tc.contains {
				var content string
				for _, f := range files {
					if f.Name == name {
						content = squeezeBlanks(string(f.Content))
					}
				}
				for _, want := range snippets {
					if !strings.Contains(content, squeezeBlanks(want)) {
						t.Errorf("%s lacks %q", name, want)
					}
				}
			}
			if n := strings.Count(all, "webhooks: "); tc.file == "resend.yaml" && n != 1 {
				t.Errorf("want one webhooks warning, got %d", n)
			}
			if tc.file == "stripe-spec3.yaml" {
				// The budget of issue 10: at most 200 generated lines per
				// operation, every generated file counted.
				lines, ops := generatedLines(files), 468
				if lines > 200*ops {
					t.Errorf("%d generated lines for %d operations: %.0f per operation, want at most 200", lines, ops, float64(lines)/float64(ops))
				}
				per := func(n int) float64 { return float64(n) / float64(ops) }
				t.Logf("%d lines for %d operations: %.0f per operation (types %.0f, server %.0f; of the types, form body types %.0f)", lines, ops, per(lines),
					per(generatedLines(fileNamed(files, "types.gen.go"))), per(generatedLines(fileNamed(files, "server.gen.go"))), per(formTypeLines(files)))
			}
			if testing.Short() {
				return
			}
			pkg := realSpecPackage(tc.file)
			if _, err := Write(filepath.Join(mod, pkg), files); err != nil {
				t.Fatal(err)
			}
			writeRouteTests(t, filepath.Join(mod, pkg), generatedModule+"/realspecs/"+pkg, files, tc.file)
			pkgs = append(pkgs, "./"+pkg)
		})
	}
	if testing.Short() || len(pkgs) == 0 {
		return
	}
	// The run's one go command builds every package, vets it with all of
	// go vet's checks (-vet=all: what go vet ./... runs, on the generated
	// code and the tests beside it, in the same action graph as the build)
	// and runs the tests.
	out := moduleResult(t, "realspecs")
	if n := strings.Count(out, "--- PASS: TestRoutesRegister "); n != len(pkgs) {
		t.Errorf("TestRoutesRegister passed in %d of %d packages:\n%s", n, len(pkgs), out)
	}
	t.Logf("built and vetted; NewHandler registers its routes, valid requests reach the handler: %s", strings.TrimSpace(out))
}

// realSpecPackage is the directory, in TestRealSpecs' module, of the
// package generated from a real spec: its file name up to the first dot,
// dashes made underscores ("api" for api.github.com.json.gz).
func realSpecPackage(file string) string {
	return strings.ReplaceAll(strings.Split(file, ".")[0], "-", "_")
}

// fileNamed returns the file of files called name (none when there is none).
func fileNamed(files []File, name string) []File {
	for _, f := range files {
		if f.Name == name {
			return []File{f}
		}
	}
	return nil
}

// realSpecExceptions are operations of a real spec whose valid request is
// known not to reach the handler, by spec file and operation id, with the
// reason.
var realSpecExceptions = map[string]map[string]string{
	"kratos-api.json": {
		"updateSettingsFlow": "its only security requirement is sessionToken, which kratos does not define (warned at generation): no credential can satisfy it, so 401 is right",
	},
}

// writeRouteTests writes tests beside the package generated from a real
// spec (in dir, import path importPath), which TestRealSpecs runs with one
// go test for every spec: TestRoutesRegister runs NewHandler, which puts
// every route on a net/http.ServeMux, which panics on two patterns it
// cannot order (GitHub's /orgs/{org}/rulesets/{ruleset_id}/history and
// /orgs/{org}/rulesets/rule-suites/{rule_suite_id} did); TestValidRequests
// (testdata/realspecs/requests_test.go) sends every operation a request of
// the spec's own shape over HTTP to NewHandler(Unimplemented{}, engine) on
// PostgreSQL (DATABASE_URL; under CI=true it fails without it, through
// runtime/pgtest) and wants each to reach the handler, and malformed bodies
// refused with 400 problem+json and no record. An external test package,
// so that the generated package is compiled as it is built, not with tests.
func writeRouteTests(t *testing.T, dir, importPath string, files []File, file string) {
	t.Helper()
	var server []byte
	for _, f := range files {
		if f.Name == "server.gen.go" {
			server = f.Content
		}
	}
	name, data := readSpec(t, file)
	name = filepath.Base(name)
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "testdata", name), addRootExtension(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join("testdata", "realspecs", "requests_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	const imp = `api "example.com/generated/api"`
	if !bytes.Contains(test, []byte(imp)) {
		t.Fatalf("testdata/realspecs/requests_test.go does not import %s", imp)
	}
	test = bytes.Replace(test, []byte(imp), []byte("api "+strconv.Quote(importPath)), 1)
	if err := os.WriteFile(filepath.Join(dir, "requests_test.go"), test, 0o644); err != nil {
		t.Fatal(err)
	}
	src := "package api_test\n\nimport (\n\t\"context\"\n\t\"testing\"\n\n\tapi " + strconv.Quote(importPath) + "\n\t\"github.com/idemgen/idemgen/runtime/idem\"\n)\n\n"
	src += "var (\n\t_ context.Context\n\t_ idem.Operation\n)\n\nconst specFile = " + strconv.Quote(name) + "\n\n"
	if bytes.Contains(server, []byte("\nvar IdempotentOperations = ")) {
		src += "var idempotentOperations = api.IdempotentOperations\n\n"
	} else {
		src += "var idempotentOperations []*idem.Operation\n\n"
	}
	src += "var exceptions = map[string]string{\n"
	for _, id := range slices.Sorted(maps.Keys(realSpecExceptions[file])) {
		src += "\t" + strconv.Quote(id) + ": " + strconv.Quote(realSpecExceptions[file][id]) + ",\n"
	}
	src += "}\n\n"
	opts := ""
	if bytes.Contains(server, []byte("func WithSecurity(")) {
		// Hooks that accept every credential: the methods of the generated
		// Security interface, each returning a principal.
		src += "type security struct{}\n\n"
		iface := string(server[bytes.Index(server, []byte("type Security interface {")):])
		iface = iface[:strings.Index(iface, "\n}")]
		for _, line := range strings.Split(iface, "\n")[1:] {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "//") {
				continue
			}
			line = strings.Replace(line, "(Principal, error)", "(api.Principal, error)", 1)
			src += "func (security) " + line + " { return \"conformance\", nil }\n\n"
		}
		opts = "api.WithSecurity(security{})"
	}
	src += "var options = []api.Option{" + opts + "}\n\n"
	src += "func TestRoutesRegister(t *testing.T) {\n\tapi.NewHandler(api.Unimplemented{}, nil, options...)\n\tt.Logf(\"%d routes\", len(api.Routes(api.Unimplemented{}, nil, options...)))\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "realspec_setup_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func generatedLines(files []File) int {
	n := 0
	for _, f := range files {
		n += bytes.Count(f.Content, []byte("\n"))
	}
	return n
}

// formTypeLines counts the lines of the types generated from
// application/x-www-form-urlencoded request bodies: from a doc comment that
// names such a location (a shared type's first) to the next type's doc
// comment.
func formTypeLines(files []File) int {
	n := 0
	for _, f := range files {
		if f.Name != "types.gen.go" {
			continue
		}
		in := false
		for _, line := range strings.Split(string(f.Content), "\n") {
			if strings.HasPrefix(line, "// ") && strings.Contains(line, " (#/") || strings.Contains(line, " is generated from #/") {
				in = strings.Contains(line, "/requestBody/content/application~1x-www-form-urlencoded/")
			}
			if in {
				n++
			}
		}
	}
	return n
}
