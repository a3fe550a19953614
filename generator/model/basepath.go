package model

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/diag"
)

// resolveBasePath decides the prefix of every route: the config's basePath
// when the config sets one ("" or "/" for none), else the path of the spec's
// first server (see serversBasePath).
func resolveBasePath(opts *Options, doc *openapi3.T) (string, []diag.Warning, error) {
	if opts.BasePath != nil {
		p := strings.TrimSuffix(*opts.BasePath, "/")
		if err := checkBasePath(p); err != nil {
			return "", nil, fmt.Errorf("config: basePath %q: %v", *opts.BasePath, err)
		}
		return p, nil, nil
	}
	return serversBasePath(doc.Servers, opts.File)
}

// serversBasePath is the path of the first of servers, variables replaced by
// their defaults and without a trailing slash: "/v1" for
// https://api.example.com/v1 and for /v1, "" for https://api.example.com/
// or no servers. The first server is the one tools pick by default; when
// another server has another path, or a variable in the path allows other
// values, a warning says which path the routes take and how to choose. A
// server whose path cannot be known at generation (a URL relative to where
// the document is served, such as "v1") or cannot be a route prefix gives
// no base path and a warning.
func serversBasePath(servers openapi3.Servers, file string) (string, []diag.Warning, error) {
	if len(servers) == 0 {
		return "", nil, nil
	}
	var ws []diag.Warning
	warn := func(format string, args ...any) {
		ws = append(ws, diag.Warning{Where: file, Message: fmt.Sprintf(format, args...), Kind: diag.WarnRefused})
	}
	const choose = `set basePath in the config to choose ("" for none)`
	first, alt, err := serverPath(servers[0])
	if err != nil {
		warn("servers[0] %q: %v; the routes get no base path; %s", servers[0].URL, err, choose)
		return "", ws, nil
	}
	if len(alt) > 0 {
		warn("servers[0] %q: routes are under %s, the path with the variables' defaults; the variables also allow %s; %s",
			servers[0].URL, quotePath(first), strings.Join(alt, ", "), choose)
	}
	var others []string
	for i, s := range servers[1:] {
		p, _, err := serverPath(s)
		switch {
		case err != nil:
			others = append(others, fmt.Sprintf("servers[%d] %q (%v)", i+1, s.URL, err))
		case p != first:
			others = append(others, fmt.Sprintf("%s of servers[%d] %q", quotePath(p), i+1, s.URL))
		}
	}
	if len(others) > 0 {
		warn("servers differ in their paths: routes are under %s of servers[0] %q, not %s; %s",
			quotePath(first), servers[0].URL, strings.Join(others, ", "), choose)
	}
	return first, ws, nil
}

func quotePath(p string) string {
	if p == "" {
		return `"" (no base path)`
	}
	return p
}

var serverVar = regexp.MustCompile(`\{([^{}]*)\}`)

// serverPath is the path of a server's URL with its variables' defaults,
// without a trailing slash, and the other paths a variable in the path
// allows (from its enum).
func serverPath(s *openapi3.Server) (string, []string, error) {
	if s == nil {
		return "", nil, nil
	}
	var undefined []string
	subst := func(pick func(name string, v *openapi3.ServerVariable) string) string {
		return serverVar.ReplaceAllStringFunc(s.URL, func(m string) string {
			name := m[1 : len(m)-1]
			v := s.Variables[name]
			if v == nil {
				if !slices.Contains(undefined, name) {
					undefined = append(undefined, name)
				}
				return m
			}
			return pick(name, v)
		})
	}
	uri := subst(func(_ string, v *openapi3.ServerVariable) string { return v.Default })
	if len(undefined) > 0 {
		return "", nil, fmt.Errorf("variable %s is not defined in its variables", strings.Join(undefined, ", "))
	}
	p, err := urlPath(uri)
	if err != nil {
		return "", nil, err
	}
	// Other values of variables that appear in the path.
	var alt []string
	for name, v := range s.Variables {
		for _, e := range v.Enum {
			if e == v.Default {
				continue
			}
			q, err := urlPath(subst(func(n string, v *openapi3.ServerVariable) string {
				if n == name {
					return e
				}
				return v.Default
			}))
			if err == nil && q != p && !slices.Contains(alt, quotePath(q)) {
				alt = append(alt, quotePath(q))
			}
		}
	}
	slices.Sort(alt)
	return p, alt, nil
}

// urlPath is the path of a server URL, absolute (https://host/v1) or
// relative to the document's host (/v1), without a trailing slash.
func urlPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	if u.Scheme == "" && u.Host == "" && u.Path != "" && !strings.HasPrefix(u.Path, "/") {
		return "", fmt.Errorf("a URL relative to where the document is served: its path is not known at generation")
	}
	p := strings.TrimSuffix(u.Path, "/")
	if err := checkBasePath(p); err != nil {
		return "", err
	}
	return p, nil
}

// basePathChars are the characters a base path may hold: RFC 3986's pchar
// without percent-encoding, and no braces (they would be ServeMux wildcards).
var basePathChars = regexp.MustCompile(`^(/[A-Za-z0-9._~!$&'()*+,;=:@-]+)*$`)

// checkBasePath reports why p cannot prefix net/http.ServeMux patterns.
func checkBasePath(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("a base path starts with /")
	}
	if !basePathChars.MatchString(p) {
		return fmt.Errorf("a base path is /-separated segments of letters, digits and -._~!$&'()*+,;=:@ (no empty segment, braces or percent-encoding)")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("a base path has no . or .. segment (net/http cleans them away)")
		}
	}
	return nil
}
