package generator

import (
	"strings"
	"testing"
)

// basePathSpec is a one-operation spec with the given servers block.
func basePathSpec(servers string) []byte {
	return []byte(`openapi: 3.0.3
info: {title: t, version: "1"}
` + servers + `
paths:
  /orders:
    post:
      operationId: createOrder
      x-idempotent: {}
      responses:
        "201": {description: created}
`)
}

// TestBasePathFromServers: without a basePath in the config, the routes go
// under the path of the spec's first server, variables at their defaults;
// a warning says when servers disagree, a variable allows other paths, or
// the path cannot be known or used.
func TestBasePathFromServers(t *testing.T) {
	for _, tc := range []struct {
		name, servers, want string
		warn                []string // substrings of the one warning; nil: no warning
	}{
		{"no servers", ``, "", nil},
		{"absolute", `servers: [{url: "https://api.example.com/v1"}]`, "/v1", nil},
		{"trailing slash", `servers: [{url: "https://api.example.com/v1/"}]`, "/v1", nil},
		{"host only", `servers: [{url: "https://api.example.com/"}]`, "", nil},
		{"relative to the host", `servers: [{url: /api/v2}]`, "/api/v2", nil},
		{"root", `servers: [{url: /}]`, "", nil},
		{"same path twice", `servers: [{url: "https://api.example.com/v1"}, {url: "https://sandbox.example.com/v1"}]`, "/v1", nil},
		{"paths differ", `servers: [{url: "https://api.example.com/v1"}, {url: "https://sandbox.example.com/test/v1"}, {url: "http://localhost:8080"}]`, "/v1",
			[]string{`servers differ in their paths: routes are under /v1 of servers[0] "https://api.example.com/v1", not /test/v1 of servers[1] "https://sandbox.example.com/test/v1", "" (no base path) of servers[2] "http://localhost:8080"`, "set basePath in the config"}},
		{"variables", `servers:
  - url: "{scheme}://{host}/api/{version}"
    variables:
      scheme: {default: https}
      host: {default: api.example.com, enum: [api.example.com, eu.example.com]}
      version: {default: v2, enum: [v1, v2, v3]}`, "/api/v2",
			[]string{`servers[0] "{scheme}://{host}/api/{version}": routes are under /api/v2, the path with the variables' defaults; the variables also allow /api/v1, /api/v3`}},
		{"variable without enum", `servers: [{url: "https://api.example.com/{version}", variables: {version: {default: v9}}}]`, "/v9", nil},
		{"relative to the document", `servers: [{url: v1}]`, "",
			[]string{`servers[0] "v1": a URL relative to where the document is served: its path is not known at generation; the routes get no base path`}},
		{"undefined variable", `servers: [{url: "https://api.example.com/{version}"}]`, "",
			[]string{`servers[0] "https://api.example.com/{version}": variable version is not defined in its variables; the routes get no base path`}},
		{"percent-encoded", `servers: [{url: "https://api.example.com/a%20b"}]`, "",
			[]string{`servers[0] "https://api.example.com/a%20b": a base path is /-separated segments`}},
		{"dot segment", `servers: [{url: "https://api.example.com/v1/../v2"}]`, "",
			[]string{`no . or .. segment`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(Config{Spec: "openapi.yaml", SpecData: basePathSpec(tc.servers)})
			if err != nil {
				t.Fatal(err)
			}
			if s.Model.BasePath != tc.want {
				t.Errorf("base path %q, want %q", s.Model.BasePath, tc.want)
			}
			var got []string
			for _, w := range s.Warnings {
				if strings.Contains(w.Message, "server") {
					got = append(got, w.String())
				}
			}
			if tc.warn == nil {
				if len(got) > 0 {
					t.Errorf("unexpected warnings: %q", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one warning, got %q", got)
			}
			if !strings.HasPrefix(got[0], "openapi.yaml: ") {
				t.Errorf("warning %q does not name the spec", got[0])
			}
			for _, w := range tc.warn {
				if !strings.Contains(got[0], w) {
					t.Errorf("warning %q lacks %q", got[0], w)
				}
			}
		})
	}
}

// TestBasePathConfigWins: the config's basePath, when set, replaces the
// servers' path; "" and "/" set none; a path that cannot prefix a ServeMux
// pattern is an error naming it.
func TestBasePathConfigWins(t *testing.T) {
	spec := basePathSpec(`servers: [{url: "https://api.example.com/v1"}, {url: "https://x.example.com/other"}]`)
	for _, tc := range []struct{ cfg, want, err string }{
		{"", "", ""},
		{"/", "", ""},
		{"/api", "/api", ""},
		{"/api/v3/", "/api/v3", ""},
		{"api", "", `config: basePath "api": a base path starts with /`},
		{"/a/{x}", "", `config: basePath "/a/{x}": a base path is /-separated segments`},
		{"/a//b", "", `config: basePath "/a//b": a base path is /-separated segments`},
	} {
		p := tc.cfg
		cfg := Config{Spec: "openapi.yaml", SpecData: spec, BasePath: &p}
		files, warnings, err := Generate(cfg)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("basePath %q: error %v, want %q", tc.cfg, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("basePath %q: %v", tc.cfg, err)
		}
		for _, w := range warnings {
			if strings.Contains(w.Message, "server") {
				t.Errorf("basePath %q: the servers are not consulted, yet: %s", tc.cfg, w)
			}
		}
		server := fileContent(files, "server.gen.go")
		if want := "const BasePath = \"" + tc.want + "\"\n"; !strings.Contains(server, want) {
			t.Errorf("basePath %q: server.gen.go lacks %q", tc.cfg, want)
		}
	}
	// Unset, the first server's path is the generated default.
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: spec})
	if err != nil {
		t.Fatal(err)
	}
	if want := "const BasePath = \"/v1\"\n"; !strings.Contains(fileContent(files, "server.gen.go"), want) {
		t.Errorf("server.gen.go lacks %q", want)
	}
}

func fileContent(files []File, name string) string {
	for _, f := range files {
		if f.Name == name {
			return string(f.Content)
		}
	}
	return ""
}
