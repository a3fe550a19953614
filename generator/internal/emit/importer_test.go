package emit

import "testing"

// TestImporterNames: the importer names a package after its path's last
// element made an identifier, and numbers the second of a name.
func TestImporterNames(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"gopkg.in/yaml.v3", "yaml"}, {"github.com/google/go-cmp/cmp", "cmp"}, {"example.com/go-thing", "go_thing"},
		{"example.com/2fa", "_2fa"}, {"example.com/type", "type_"}, {"example.com/v2", "example_com"},
	} {
		if got := cleanPackageName(pkgName(tc.path)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.path, got, tc.want)
		}
	}
	im := newImporter()
	if a, b, c := im.name("example.com/ctx"), im.name("example.com/x/ctx"), im.name("example.com/ctx"); a != "ctx2" || b != "ctx3" || c != a {
		t.Errorf("ctx imports named %s, %s, %s", a, b, c)
	}
}
