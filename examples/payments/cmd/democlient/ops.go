package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
)

// demoSealKeys makes a key for this run to seal the service's stored
// responses at rest (IDEM_SEAL_KEYS, docs/runbook.md).
func demoSealKeys() string {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // crypto/rand.Read does not fail (it crashes the program instead)
	return "demo:" + base64.StdEncoding.EncodeToString(secret)
}

// operate shows what the people who run the service see: the Prometheus
// metrics the demo's requests left, and one record through the on-call
// tool, `idemgen records get`.
func (d *demo) operate() {
	d.title("Operating it: /metrics and idemgen records")
	resp, err := http.Get(d.svcURL + "/metrics")
	if err != nil {
		d.expect(false, "GET /metrics: %v", err)
		return
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d.printf("  > GET /metrics (the idempotency lines)\n")
	var executed, replayed, conflicts bool
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "idem_requests_total") && !strings.HasPrefix(line, "idem_outbox_") &&
			!strings.HasPrefix(line, "idem_conflicts_total") && !strings.HasPrefix(line, "idem_new_keys_total") {
			continue
		}
		d.printf("  < %s\n", line)
		executed = executed || strings.HasPrefix(line, `idem_requests_total{operation="createPayment",outcome="executed"}`)
		replayed = replayed || strings.HasPrefix(line, `idem_requests_total{operation="createPayment",outcome="replayed"}`)
		conflicts = conflicts || strings.HasPrefix(line, `idem_conflicts_total{operation="createPayment"} `)
	}
	d.expect(resp.StatusCode == 200 && executed && replayed && conflicts,
		"requests counted by operation and outcome, the conflicts on createPayment too")

	d.printf("\n  $ idemgen records get %s\n", d.k1)
	var out bytes.Buffer
	cmd := exec.CommandContext(d.ctx, "go", "tool", "idemgen", "records", "get", d.k1)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+d.dbURL)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		d.println("    " + line)
	}
	d.expect(err == nil && strings.Contains(out.String(), "COMPLETED") && strings.Contains(out.String(), "201,") &&
		strings.Contains(out.String(), "sealed with key demo"),
		"the record: COMPLETED, its 201 stored for replay, sealed at rest (the body only with -show-body and the key)")
}
