package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecurityHooks generates the golden case testdata/golden/security
// (every kind of security scheme, AND/OR requirements, optional and no
// security, an undefined scheme) and runs testdata/security/secured_test.go
// against the generated package: real HTTP, real PostgreSQL (DATABASE_URL;
// under CI=true a missing database fails the test).
func TestSecurityHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code; skipped with -short")
	}
	cfg, err := LoadConfig(filepath.Join("testdata", "golden", "security", "idemgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, warnings, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range warnings {
		found = found || strings.Contains(w.String(), `security scheme "sessionToken" is not defined`) && strings.Contains(w.String(), "401")
	}
	if !found {
		t.Errorf("no warning about the undefined scheme sessionToken: %v", warnings)
	}
	test, err := os.ReadFile(filepath.Join("testdata", "security", "secured_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, File{Name: "secured_test.go", Content: test})
	modulePackage(t, "security", files)
	out := moduleResult(t, "security")
	for _, name := range []string{"TestRefusedWithoutRecord", "TestAdmitted", "TestPrincipalScopesTheKey", "TestCredentialsNotFingerprinted", "TestNewHandlerWithoutSecurity", "TestClientCredentials", "TestNoPrincipalRefused", "TestUnscopedWarning"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}
