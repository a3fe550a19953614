package generator

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const webhookSpec = `openapi: 3.1.0
info: {title: Hooks, version: '1'}
security:
  - apiKey: []
components:
  securitySchemes:
    apiKey: {type: apiKey, in: header, name: X-Key}
    signature: {type: apiKey, in: header, name: Webhook-Signature}
webhooks:
  order.paid:
    post:
      summary: An order was paid.
      security:
        - signature: []
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [at]
              properties:
                at: {type: string, format: date-time}
                ids: {type: array, items: {type: string, format: uuid}}
      responses: {'200': {description: ok}}
  order.refunded:
    post:
      requestBody:
        content:
          application/json:
            schema: {type: array, items: {type: string, format: date-time}}
      responses: {'200': {description: ok}}
  ping:
    post:
      responses: {'200': {description: ok}}
  upload:
    post:
      requestBody:
        content:
          text/csv:
            schema: {type: string}
      responses: {'200': {description: ok}}
paths: {}
`

func generateWebhookSpec(t *testing.T, spec string) ([]File, []Warning, error) {
	t.Helper()
	return Generate(Config{Spec: "hooks.yaml", SpecData: []byte(spec), Package: "hooks", Output: t.TempDir()})
}

func TestWebhooks(t *testing.T) {
	files, warnings, err := generateWebhookSpec(t, webhookSpec)
	if err != nil {
		t.Fatal(err)
	}
	var ws []string
	for _, w := range warnings {
		ws = append(ws, w.String())
	}
	all := strings.Join(ws, "\n")
	for _, want := range []string{
		// Root security is not inherited; only the webhooks without their own are named.
		`hooks.yaml: webhooks: the document's security (apiKey) does not apply to webhooks; without security of their own: order.refunded (`,
		`hooks.yaml: webhook "ping": no request body; skipped`,
		`hooks.yaml: webhook "upload": request body is not JSON (text/csv); skipped`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q; got:\n%s", want, all)
		}
	}
	if strings.Contains(all, "ignored") {
		t.Errorf("webhooks still reported as ignored:\n%s", all)
	}
	var src string
	for _, f := range files {
		if f.Name == "webhooks.gen.go" {
			src = string(f.Content)
		}
	}
	for _, want := range []string{
		"\t\"time\"\n",
		"func SendOrderPaid(ctx context.Context, tx pgx.Tx, payload OrderPaidPayload, opts ...events.Option) error {",
		"func SendOrderRefunded(ctx context.Context, tx pgx.Tx, payload []time.Time, opts ...events.Option) error {",
		"The spec secures it with signature: check deliveries with WithWebhookVerifier.",
		`handle("order.paid", h.handleWebhookOrderPaid)`,
		"idemimpl.DecodeJSON(body, &payload, true)",  // order.paid requires a body
		"idemimpl.DecodeJSON(body, &payload, false)", // order.refunded does not
		`const WebhookSource = "urn:idemgen:hooks"`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("webhooks.gen.go lacks %q", want)
		}
	}
	if strings.Contains(src, "Ping") || strings.Contains(src, "Upload") {
		t.Error("skipped webhooks were generated")
	}
	if testing.Short() {
		return
	}
	modulePackage(t, "webhooks", files)
	moduleResult(t, "webhooks")
}

// TestWebhookNameClash: two webhooks whose names make the same Go name
// both generate, the second numbered, with a warning naming both.
func TestWebhookNameClash(t *testing.T) {
	spec := strings.Replace(webhookSpec, "  order.refunded:\n", "  order_refunded:\n    post:\n      requestBody: {content: {application/json: {schema: {type: string}}}}\n      responses: {'200': {description: ok}}\n  order.refunded:\n", 1)
	files, warnings, err := generateWebhookSpec(t, spec)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, w := range warnings {
		all = append(all, w.String())
	}
	want := `Go identifier OrderRefunded (methods of WebhookReceiver) is generated for both webhook #/webhooks/order.refunded/post and webhook #/webhooks/order_refunded/post; the latter is named OrderRefunded2`
	if !strings.Contains(strings.Join(all, "\n"), want) {
		t.Errorf("warnings lack %q:\n%s", want, strings.Join(all, "\n"))
	}
	var src string
	for _, f := range files {
		if f.Name == "webhooks.gen.go" {
			src = string(f.Content)
		}
	}
	for _, want := range []string{"func SendOrderRefunded(", "func SendOrderRefunded2(", "WebhookTypeOrderRefunded2 = \"order_refunded\""} {
		if !strings.Contains(src, want) {
			t.Errorf("webhooks.gen.go lacks %q", want)
		}
	}
}

func TestNoWebhooksNoFile(t *testing.T) {
	files, _, err := generateWebhookSpec(t, "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {}\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "webhooks.gen.go" {
			t.Fatal("webhooks.gen.go generated for a spec without webhooks")
		}
	}
}

// TestWebhookTestAPIFresh keeps the package runtime/webhook's end-to-end
// tests compile against (runtime/webhook/internal/testapi) in step with the
// generator: regenerate it with go generate in that directory.
func TestWebhookTestAPIFresh(t *testing.T) {
	cfgPath := filepath.Join(repoRoot(t), "runtime", "webhook", "internal", "testapi", "idemgen.yaml")
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(cfg.Output, f.Name))
		if err != nil || !bytes.Equal(got, f.Content) {
			t.Errorf("%s is stale: run go generate ./runtime/webhook/internal/testapi", f.Name)
		}
	}
}
