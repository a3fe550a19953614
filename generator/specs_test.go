package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realSpecs are the public specs of testdata/specs and the warnings their
// known traps must produce.
var realSpecs = []struct {
	file     string
	rename   map[string]string
	warnings []string
	contains map[string][]string // generated file -> snippets it must hold
}{
	{"petstore-expanded.yaml", nil, nil, nil},
	{"kratos-api.json", map[string]string{
		"#/components/schemas/batchPatchIdentitiesResponse":                      "BatchPatchIdentitiesResult",
		"#/components/schemas/createFedcmFlowResponse":                           "CreateFedcmFlowResult",
		"#/components/schemas/manageSessionsResponse":                            "ManageSessionsResult",
		"#/components/schemas/nullTime":                                          "NullTimeValue",
		"#/components/schemas/continueWithDeviceAuthnPinEntryUi/properties/data": "ContinueWithDeviceAuthnPinEntryUiInlineData",
	}, []string{
		`kratos-api.json: info.version is empty`,
		`kratos-api.json: security scheme "sessionToken" is not defined`,
	}, nil},
	{"spotify-web-api.yml", nil, nil, nil},
	{"resend.yaml", nil, []string{
		`resend.yaml: webhooks: the document's security (bearerAuth) does not apply to webhooks; without security of their own: contact.created, contact.deleted,`,
	}, map[string][]string{"webhooks.gen.go": {
		"func SendEmailSent(ctx context.Context, tx pgx.Tx, payload EmailSentEvent, opts ...events.Option) error {",
		"\tEmailSent(ctx context.Context, tx pgx.Tx, payload EmailSentEvent) error\n",
		`handle("email.delivery_delayed", h.handleWebhookEmailDeliveryDelayed)`,
	}}},
}

func realSpecConfig(t testing.TB, file string, rename map[string]string) Config {
	t.Helper()
	path := filepath.Join("testdata", "specs", file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Spec: path, SpecData: addRootExtension(t, data), Package: "api", Output: filepath.Join("testdata", "out"), Rename: rename}
}

// TestRealSpecs generates every shared spec with a root `x-idempotent: {}`
// and, unless -short, builds and vets the output.
func TestRealSpecs(t *testing.T) {
	for _, tc := range realSpecs {
		t.Run(strings.TrimSuffix(tc.file, filepath.Ext(tc.file)), func(t *testing.T) {
			files, warnings, err := Generate(realSpecConfig(t, tc.file, tc.rename))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range warnings {
				got = append(got, w.String())
				t.Log("warning:", w)
			}
			all := strings.Join(got, "\n")
			for _, want := range tc.warnings {
				if !strings.Contains(all, want) {
					t.Errorf("warnings lack %q; got:\n%s", want, all)
				}
			}
			for name, snippets := range tc.contains {
				var content string
				for _, f := range files {
					if f.Name == name {
						content = string(f.Content)
					}
				}
				for _, want := range snippets {
					if !strings.Contains(content, want) {
						t.Errorf("%s lacks %q", name, want)
					}
				}
			}
			if n := strings.Count(all, "webhooks: "); tc.file == "resend.yaml" && n != 1 {
				t.Errorf("want one webhooks warning, got %d", n)
			}
			if testing.Short() {
				return
			}
			goBuildVet(t, tempModule(t, files))
		})
	}
}
