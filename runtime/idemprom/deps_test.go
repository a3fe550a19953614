package idemprom_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreStaysLean: the packages a generated server compiles never pull in
// Prometheus, OpenTelemetry or a Redis client; only the adapters do.
func TestCoreStaysLean(t *testing.T) {
	core := []string{"../idem", "../idemimpl", "../events", "../natsjs", "../idemseal"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, core...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/prometheus/") || strings.HasPrefix(dep, "go.opentelemetry.io/") ||
			strings.HasPrefix(dep, "github.com/redis/") {
			t.Errorf("a core package depends on %s", dep)
		}
	}
}
