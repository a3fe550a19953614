package idemprom_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idemprom"
)

// rulesDir holds the Prometheus rules docs/runbook.md describes.
var rulesDir = filepath.Join("..", "..", "deploy", "prometheus")

// registered returns the metric names and label names idemprom registers
// with the default namespace, from the collectors' descriptions (a vector
// without children describes itself too).
func registered(t *testing.T) (names, labels map[string]bool) {
	t.Helper()
	ch := make(chan *prometheus.Desc, 100)
	go func() {
		idemprom.New(idemprom.Options{TenantLabel: true}).Describe(ch)
		idemprom.NewOutboxCollector(nil, "", 0).Describe(ch)
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	vl := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	names, labels = map[string]bool{}, map[string]bool{}
	for d := range ch {
		s := d.String()
		m := fq.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("cannot read the name of %s", s)
		}
		names[m[1]] = true
		if m := vl.FindStringSubmatch(s); m != nil && m[1] != "" {
			for _, l := range strings.Split(m[1], ",") {
				labels[strings.TrimSpace(l)] = true
			}
		}
	}
	return names, labels
}

// patroniMetrics are the series Patroni 3.0 exports at GET /metrics
// (patroni/api.py), which patroni.rules.yml reads.
var patroniMetrics = []string{"patroni_version", "patroni_postgres_running", "patroni_postmaster_start_time",
	"patroni_master", "patroni_primary", "patroni_xlog_location", "patroni_standby_leader", "patroni_replica",
	"patroni_sync_standby", "patroni_xlog_received_location", "patroni_xlog_replayed_location",
	"patroni_xlog_replayed_timestamp", "patroni_xlog_paused", "patroni_postgres_server_version",
	"patroni_cluster_unlocked", "patroni_failsafe_mode_is_active", "patroni_postgres_timeline",
	"patroni_dcs_last_seen", "patroni_pending_restart", "patroni_is_paused"}

// TestRules: every idem_* series that deploy/prometheus's rules and their
// unit tests name is one idemprom registers (a histogram's _bucket, _count
// and _sum series are named after it), and every label they select or
// aggregate by is one of its labels: renaming a metric or a label in
// idemprom fails here, where promtool's own tests, written with the old
// name, would still pass. Patroni's series are checked against the names
// Patroni exports.
func TestRules(t *testing.T) {
	names, labels := registered(t)
	for _, l := range []string{"le", "job", "instance", "scope"} {
		labels[l] = true // histogram buckets; the target's; Patroni's
	}
	files, err := filepath.Glob(filepath.Join(rulesDir, "*.yml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("rules and tests in %s: %v, %v", rulesDir, files, err)
	}
	series := regexp.MustCompile(`\b(idem|patroni)_[a-z0-9_]+\b`)
	labelUse := regexp.MustCompile(`(?:\b(?:by|on|without|ignoring)\s*\(([^)]*)\))|(?:([a-z_]+)\s*(?:=~|!~|!=|=)\s*")`)
	used := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, n := range series.FindAllString(line, -1) {
				used++
				if strings.HasPrefix(n, "patroni_") {
					if !slices.Contains(patroniMetrics, n) {
						t.Errorf("%s: %s is not a series Patroni exports", filepath.Base(f), n)
					}
					continue
				}
				base := n
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && names[b] {
						base = b
					}
				}
				if !names[base] {
					t.Errorf("%s: %s is not a metric idemprom registers", filepath.Base(f), n)
				}
			}
			for _, m := range labelUse.FindAllStringSubmatch(line, -1) {
				for _, l := range strings.Split(m[1]+","+m[2], ",") {
					if l = strings.TrimSpace(l); l != "" && !labels[l] && !strings.Contains(line, "annotations") {
						t.Errorf("%s: label %q is not one idemprom's metrics have: %s", filepath.Base(f), l, strings.TrimSpace(line))
					}
				}
			}
		}
	}
	if used == 0 {
		t.Fatal("the rules name no series")
	}
}
